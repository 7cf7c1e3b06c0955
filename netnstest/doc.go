// Package netnstest makes throwaway network namespaces for kernel tests of
// programs built on ipvskit: a node, clients and backends joined by veth
// pairs, with addresses, routes and small TCP and UDP servers, all gone
// when the test ends. It is what ipvskit's own kernel tests and its demo
// do by hand, so that a user's test of their own load balancer, proxy or
// CNI plugin is a screen of code:
//
//	func TestMyProxy(t *testing.T) {
//		node := netnstest.New(t) // root, or the test is skipped
//		node.Sysctl(t, "net/ipv4/ip_forward", "1")
//		client := node.Peer(t, "client", netip.MustParsePrefix("198.18.0.1/24"), netip.MustParsePrefix("198.18.0.2/24"))
//		backend := node.Peer(t, "backend", netip.MustParsePrefix("198.18.1.1/24"), netip.MustParsePrefix("198.18.1.2/24"))
//		backend.ServeTCP(t, netip.MustParseAddrPort("198.18.1.2:8080"), "backend-1")
//
//		p, err := proxier.Open(ctx, nil, node.Handle()) // your program, in the node's namespace
//		...
//		p.Sync(ctx, state) // 198.18.100.1:80 -> 198.18.1.2:8080
//		got, err := client.DialTCP(ctx, netip.MustParseAddrPort("198.18.100.1:80"))
//		// got == "backend-1"
//	}
//
// Every function takes the test's testing.TB and fails it on an error
// (t.Fatal), but for New, which skips a test that does not run as root.
// Each namespace starts with only lo, up; the test's own namespace (and
// the machine's) is never entered or changed: work inside a namespace runs
// on an OS thread of its own that is thrown away afterwards (Do). Use
// addresses of 198.18.0.0/15 and 2001:db8::/32, which no real network
// uses. Network namespaces exist only on Linux: elsewhere New skips.
package netnstest
