package proxier

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/iptables"
)

// kubeProxyIPTables is a kube-proxy iptables-mode node's rules, trimmed to
// one Service (198.18.50.10:80, one endpoint on backend-1), with kubelet's
// chains and another program's chain that jumps to KUBE-MARK-MASQ. It is
// written with the namespace's plain iptables-restore before any Proxier
// runs, and must survive every Sync, Reconcile, Drain, restart and
// Cleanup, with the Service answering throughout.
const kubeProxyIPTables = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-SVC-KPWEB4HTTP2QXZ7A - [0:0]
:KUBE-SEP-KPWEB4BACKEND1AB - [0:0]
:THEIR-PODS - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A PREROUTING -j THEIR-PODS
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SERVICES -d 198.18.50.10/32 -p tcp -m comment --comment "default/their-web:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-KPWEB4HTTP2QXZ7A
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-SVC-KPWEB4HTTP2QXZ7A ! -s 198.19.0.0/16 -d 198.18.50.10/32 -p tcp -m comment --comment "default/their-web:http cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ
-A KUBE-SVC-KPWEB4HTTP2QXZ7A -m comment --comment "default/their-web:http -> 198.18.11.2:8080" -j KUBE-SEP-KPWEB4BACKEND1AB
-A KUBE-SEP-KPWEB4BACKEND1AB -s 198.18.11.2/32 -m comment --comment "default/their-web:http" -j KUBE-MARK-MASQ
-A KUBE-SEP-KPWEB4BACKEND1AB -p tcp -m comment --comment "default/their-web:http" -m tcp -j DNAT --to-destination 198.18.11.2:8080
-A THEIR-PODS -s 198.18.99.0/24 -j KUBE-MARK-MASQ
COMMIT
*filter
:KUBE-FORWARD - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A INPUT -j KUBE-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A OUTPUT -j KUBE-FIREWALL
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
COMMIT
`

// kubeProxyIPSets are a kube-proxy IPVS-mode node's leftover ipsets.
const kubeProxyIPSets = `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-CLUSTER-IP 198.18.50.10,tcp:80
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536
add KUBE-IPVS-IPS 198.18.50.10
`

// theirWeb is the kube-proxy Service's address.
var theirWeb = ap("198.18.50.10:80")

// theirs is what the other programs own, as their tools print it: the
// iptables-save of every flavor without the instance's chains and marked
// rules, the kube-proxy ipsets, their local routes, and the virtual
// servers ipvskit must not own. Counters are left out.
func (tp *topology) theirs(t *testing.T) string {
	t.Helper()
	s := tp.snapshot(t)
	var b strings.Builder
	for _, sec := range []string{"iptables-legacy", "iptables-nft"} {
		b.WriteString("### " + sec + "\n")
		for _, l := range strings.Split(s[sec], "\n") {
			if strings.HasPrefix(l, "#") || strings.Contains(l, "IPVSKIT") || strings.Contains(l, "ipvskit:") {
				continue
			}
			b.WriteString(counters.ReplaceAllString(l, "") + "\n")
		}
	}
	b.WriteString("### ipset\n")
	for _, l := range strings.Split(s["ipset"], "\n") {
		if strings.Contains(l, "KUBE-") {
			b.WriteString(ipsetInit.ReplaceAllString(l, "") + "\n")
		}
	}
	// Local routes other programs added (not the kernel's), except out of
	// the VIP link, which goes with it at Cleanup.
	b.WriteString("### route\n")
	for _, l := range strings.Split(s["route"], "\n") {
		if l != "" && !strings.Contains(l, "proto kernel") && !strings.Contains(l, " "+DefaultLinkName+" ") {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("### ipvsadm\n")
	for _, l := range s.ipvsLines() {
		if !strings.Contains(l, "198.18.100.") || strings.Contains(l, ":443") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestIntegrationBesideKubeProxy runs a Proxier, under each back end, on a
// node that kube-proxy (iptables mode) serves, with leftovers of its IPVS
// mode, another program's rule jumping into its chains, and another
// program's virtual server at another port of one of the Proxier's VIPs.
// Through Sync, Reconcile (with the kernel's link-local address, a /24 and
// a foreign /32 on the VIP link, the link up), Drain, a restart and
// Cleanup, every foreign object stays byte for byte, kube-proxy's Service
// keeps answering, and the Proxier's own Service answers until Cleanup.
func TestIntegrationBesideKubeProxy(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) { testBesideKubeProxy(t, v) })
	}
}

func testBesideKubeProxy(t *testing.T, v variant) {
	ctx := context.Background()
	be := v.be
	tp := newTopologyIn(t, v, 1, 2)
	tp.addForeign(t)
	c1, b1, b2 := tp.clients[0], tp.backends[0], tp.backends[1]
	tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\nsysctl -qw net.ipv4.ip_forward=1\n"+
		"iptables-restore --noflush <<'EOF'\n"+kubeProxyIPTables+"EOF\n"+
		"ipset restore <<'EOF'\n"+kubeProxyIPSets+"EOF\n")
	theirsServe := func(when string) {
		t.Helper()
		wantCounts(t, "kube-proxy's Service "+when, c1.tcp(t, theirWeb, 2), map[string]int{b1.name: 2})
	}
	theirsServe("before the Proxier")
	want := tp.theirs(t)
	same := func(when string) {
		t.Helper()
		if got := tp.theirs(t); got != want {
			t.Errorf("other programs' objects changed %s (-want +got):\n%s", when, lineDiff(want, got))
		}
		theirsServe(when)
	}

	k := tp.newProxier(t, Config{Backend: be})
	state := func(backends ...int) State {
		return State{Services: map[string]Service{"web": {
			ClusterIPs: []netip.Addr{a("198.18.100.1")},
			Ports:      []Port{portHTTP},
			Endpoints:  tp.endpoints(true, false, backends),
		}}}
	}
	web := ap("198.18.100.1:80")
	k.sync(t, state(0, 1))
	wantCounts(t, "ours after the first sync", c1.tcp(t, web, 4), map[string]int{b1.name: 2, b2.name: 2})
	// Another program's virtual server at another port of our VIP,
	// addresses that are not VIPs on our link, with the link up, and
	// local routes of another protocol out of our link, one for our VIP.
	tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+
		"ipvsadm -A -t 198.18.100.1:443 -s wrr\nipvsadm -a -t 198.18.100.1:443 -r 198.18.12.2:8080 -m -w 2\n"+
		"ip link set "+DefaultLinkName+" up\n"+
		"ip addr add 198.18.121.0/24 dev "+DefaultLinkName+"\n"+
		"ip addr add 2001:db8:121::/64 dev "+DefaultLinkName+" nodad\n"+
		"ip route append local 198.18.100.1 dev "+DefaultLinkName+" table local proto static\n"+
		"ip route add local 198.18.123.1 dev "+DefaultLinkName+" table local proto static\n")
	want = tp.theirs(t)
	addrsOnLink := func() string {
		out := tp.node.Exec(t, "sh", "-c", "ip -o addr show dev "+DefaultLinkName+"; ip -o route show table local proto static")
		return ifIndex.ReplaceAllString(regexp.MustCompile(` +valid_lft.*`).ReplaceAllString(out, ""), "")
	}
	linkAddrs := addrsOnLink()
	if !strings.Contains(linkAddrs, "fe80::") || !strings.Contains(linkAddrs, "198.18.100.1 dev "+DefaultLinkName) || !strings.Contains(linkAddrs, "198.18.123.1 dev "+DefaultLinkName) {
		t.Fatalf("the link up has no link-local address, or the neighbour's routes are missing; the test proves nothing:\n%s", linkAddrs)
	}
	same("after the first sync")

	rep, err := k.p.Reconcile(ctx)
	must(t, err)
	if len(rep.Drift) != 0 {
		t.Errorf("Reconcile reported other programs' objects as drift:\n%s", rep)
	}
	if got := addrsOnLink(); got != linkAddrs {
		t.Errorf("Reconcile changed the link's addresses (-want +got):\n%s", lineDiff(linkAddrs, got))
	}
	same("after Reconcile")

	k.sync(t, state(0)) // backend-2 drains
	if _, err := k.p.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	same("after a sync and a Drain")

	// A restart reads the kernel back with the link up: it converges, and
	// leaves what is not its own.
	k2 := tp.newProxier(t, Config{Backend: be})
	res := k2.sync(t, state(0))
	if slices.Contains(res.Plan.Bind, a("198.18.100.1")) {
		t.Errorf("the restart took another program's route or address for its VIP:\n%s", res.Plan)
	}
	if n := res.Plan.IPVSAdd.Len() + res.Plan.IPVSDelete.Len() + len(res.Plan.Bind) + len(res.Plan.Unbind); n > 1 {
		// At most the drained destination's delete.
		t.Errorf("restart: %d IPVS and address changes:\n%s", n, res.Plan)
	}
	rep, err = k2.p.Reconcile(ctx)
	must(t, err)
	if len(rep.Drift) != 0 {
		t.Errorf("Reconcile after the restart:\n%s", rep)
	}
	if got := addrsOnLink(); got != linkAddrs {
		t.Errorf("the restart changed the link's addresses (-want +got):\n%s", lineDiff(linkAddrs, got))
	}
	wantCounts(t, "ours after the restart", c1.tcp(t, web, 2), map[string]int{b1.name: 2})
	same("after a restart")

	must(t, k2.p.Cleanup(ctx))
	s := tp.snapshot(t)
	checkLacks(t, s, "ipvsadm", "198.18.100.1:80")
	checkContains(t, s, "ipvsadm", "-A -t 198.18.100.1:443 -s wrr")
	checkLacks(t, s, "addr", DefaultLinkName)
	checkLacks(t, s, "route", " "+DefaultLinkName+" ")
	checkLacks(t, s, "nft", "table ip ipvskit")
	for _, sec := range []string{"iptables-legacy", "iptables-nft"} {
		checkLacks(t, s, sec, "IPVSKIT", "ipvskit:")
	}
	checkLacks(t, s, "ipset", "IPVSKIT")
	same("after Cleanup")
}

// TestIntegrationForeignObjectsWithOurNames: objects of the Proxier's names
// that it did not make (another program's dummy link; a table, chain or
// ipset of the back end's names) stop the first Sync with an error wrapping
// fs.ErrExist that names them, before anything is changed; Cleanup leaves
// them. Names of other programs' objects are refused at New.
func TestIntegrationForeignObjectsWithOurNames(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) { testForeignObjectsWithOurNames(t, v) })
	}
}

func testForeignObjectsWithOurNames(t *testing.T, v variant) {
	ctx := context.Background()
	be := v.be
	for _, c := range []struct {
		name, script string
		inErr        string
	}{
		{"link", "ip link add " + DefaultLinkName + " type dummy\nip addr add 198.18.100.1/32 dev " + DefaultLinkName +
			"\nip addr add 198.18.122.0/24 dev " + DefaultLinkName +
			"\nip route add local 198.18.100.2 dev " + DefaultLinkName + " table local proto 173", DefaultLinkName},
		{"rules", map[Backend]string{
			NFTables: "nft -f - <<'EOF'\ntable ip ipvskit {\n\tset cluster-ip {\n\t\ttype ipv4_addr\n\t\telements = { 198.18.100.1 }\n\t}\n\tchain c {\n\t\tip daddr @cluster-ip counter accept\n\t}\n}\nEOF",
			IPTables: "ipset create IPVSKIT-CLUSTER-IP hash:net family inet\nipset add IPVSKIT-CLUSTER-IP 198.18.100.0/24",
		}[be], map[Backend]string{NFTables: "ipvskit", IPTables: "IPVSKIT-CLUSTER-IP"}[be]},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp := newTopologyIn(t, v, 0, 0)
			tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+c.script+"\n")
			before := tp.snapshot(t)
			sysBefore := tp.node.Exec(t, "sysctl", "net.ipv4.vs.conntrack", "net.ipv4.ip_forward")
			k := tp.newProxier(t, Config{Backend: be})
			s := State{Services: map[string]Service{"web": {
				ClusterIPs: []netip.Addr{a("198.18.100.1")},
				Ports:      []Port{portHTTP},
				Endpoints:  []Endpoint{{Addr: a("198.18.11.2"), Ready: true}},
			}}}
			_, err := k.p.Sync(ctx, &s)
			if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), c.inErr) {
				t.Fatalf("Sync over another program's %s: %v, want an error wrapping fs.ErrExist naming %q", c.name, err, c.inErr)
			}
			after := tp.snapshot(t)
			for sec, text := range before {
				if after[sec] != text {
					t.Errorf("%s changed by the refused Sync (-want +got):\n%s", sec, lineDiff(text, after[sec]))
				}
			}
			if got := tp.node.Exec(t, "sysctl", "net.ipv4.vs.conntrack", "net.ipv4.ip_forward"); got != sysBefore {
				t.Errorf("sysctls changed by the refused Sync: %q, were %q", got, sysBefore)
			}
			must(t, k.p.Cleanup(ctx))
			after = tp.snapshot(t)
			for sec, text := range before {
				if after[sec] != text {
					t.Errorf("%s changed by Cleanup (-want +got):\n%s", sec, lineDiff(text, after[sec]))
				}
			}
		})
	}
	// Names of other programs' objects are refused before anything runs.
	for _, inst := range []string{"filter", "nat", "kube", "docker"} {
		if _, err := New(&Config{Backend: be, Instance: inst}, Deps{}); err == nil {
			t.Errorf("instance %q accepted", inst)
		}
		if _, err := iptables.NewNFTables(&iptables.NFTablesConfig{Instance: inst}); err == nil {
			t.Errorf("nftables back end with instance %q accepted", inst)
		}
	}
}

// TestIntegrationTwoInstances runs two Proxiers with different instance
// names in one namespace, one per back end pairing: both serve traffic,
// neither's Reconcile reports the other's objects, and each Cleanup leaves
// the other serving.
func TestIntegrationTwoInstances(t *testing.T) {
	addrs, routes := VIPAddresses, VIPLocalRoutes
	for _, pair := range [][2]variant{
		{{NFTables, addrs}, {NFTables, addrs}}, {{IPTables, addrs}, {IPTables, addrs}}, {{NFTables, addrs}, {IPTables, addrs}},
		{{NFTables, routes}, {NFTables, routes}}, {{IPTables, routes}, {IPTables, routes}}, {{NFTables, addrs}, {IPTables, routes}},
	} {
		t.Run(pair[0].String()+"+"+pair[1].String(), func(t *testing.T) { testTwoInstances(t, pair[0], pair[1]) })
	}
}

func testTwoInstances(t *testing.T, va, vb variant) {
	ctx := context.Background()
	tp := newTopology(t, 1, 2)
	tp.addForeign(t)
	c1, b1, b2 := tp.clients[0], tp.backends[0], tp.backends[1]
	ka := tp.newProxier(t, Config{Backend: va.be, VIPMode: va.mode, Instance: "a"})
	kb := tp.newProxier(t, Config{Backend: vb.be, VIPMode: vb.mode, Instance: "b"})
	one := func(vip string, backend int) State {
		return State{Services: map[string]Service{"web": {
			ClusterIPs: []netip.Addr{a(vip)},
			Ports:      []Port{portHTTP},
			Endpoints:  tp.endpoints(true, false, []int{backend}),
		}}}
	}
	wa, wb := ap("198.18.100.1:80"), ap("198.18.100.2:80")
	ka.sync(t, one("198.18.100.1", 0))
	kb.sync(t, one("198.18.100.2", 1))
	serves := func(when string, k *nodeKit, vip netip.AddrPort, h *host) {
		t.Helper()
		wantCounts(t, when, c1.tcp(t, vip, 2), map[string]int{h.name: 2})
		rep, err := k.p.Reconcile(ctx)
		must(t, err)
		if len(rep.Drift) != 0 {
			t.Errorf("%s: Reconcile reports drift:\n%s", when, rep)
		}
	}
	serves("a, both running", ka, wa, b1)
	serves("b, both running", kb, wb, b2)
	must(t, ka.p.Cleanup(ctx))
	serves("b after a's Cleanup", kb, wb, b2)
	s := tp.snapshot(t)
	checkLacks(t, s, "addr", " a0")
	checkLacks(t, s, "route", " a0 ")
	if got := s.vipsOn("b0", vb.mode); !slices.Equal(got, []string{"198.18.100.2/32"}) {
		t.Errorf("b's VIPs after a's Cleanup: %v", got)
	}
	checkLacks(t, s, "ipvsadm", "198.18.100.1:80")
	must(t, kb.p.Cleanup(ctx))
	s = tp.snapshot(t)
	checkLacks(t, s, "addr", " b0")
	checkLacks(t, s, "route", " b0 ")
	checkForeign(t, s)
	checkLacks(t, s, "ipvsadm", "198.18.100.")
	checkLacks(t, s, "nft", "table ip a", "table ip b")
	for _, sec := range []string{"iptables-legacy", "iptables-nft"} {
		checkLacks(t, s, sec, "A-SERVICES", "B-SERVICES", "ipvskit:")
	}
}

// TestIntegrationConflictOnTheFirstSync: another program's virtual server
// at a VIP:port the State asks for, there before the Proxier's first Sync,
// makes that Sync fail with a *ConflictError, and nothing is added to it
// (the kernel would take a destination for it in the same batch).
func TestIntegrationConflictOnTheFirstSync(t *testing.T) {
	for _, v := range variants {
		be := v.be
		t.Run(v.String(), func(t *testing.T) {
			tp := newTopologyIn(t, v, 0, 0)
			tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+
				"ipvsadm -A -t 198.18.100.1:80 -s wrr\nipvsadm -a -t 198.18.100.1:80 -r 198.18.12.2:8080 -m -w 2\n")
			before := tp.snapshot(t).ipvsLines()
			k := tp.newProxier(t, Config{Backend: be})
			s := State{Services: map[string]Service{"web": {
				ClusterIPs: []netip.Addr{a("198.18.100.1")},
				Ports:      []Port{portHTTP},
				Endpoints:  []Endpoint{{Addr: a("198.18.11.2"), Ready: true}},
			}}}
			_, err := k.p.Sync(context.Background(), &s)
			var ce *ConflictError
			if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].ServiceID != "web" {
				t.Fatalf("first Sync over a foreign virtual server: %v, want a *ConflictError for web", err)
			}
			if got := tp.snapshot(t).ipvsLines(); strings.Join(got, "\n") != strings.Join(before, "\n") {
				t.Errorf("the foreign virtual server changed: %q, was %q", got, before)
			}
			must(t, k.p.Cleanup(context.Background()))
			if got := tp.snapshot(t).ipvsLines(); strings.Join(got, "\n") != strings.Join(before, "\n") {
				t.Errorf("Cleanup changed the foreign virtual server: %q, was %q", got, before)
			}
		})
	}
}

// TestIntegrationSwitchingBackEnds moves one instance from the iptables back
// end to nftables and back, and from VIPAddresses to VIPLocalRoutes and
// back, on a node kube-proxy serves: each new Proxier
// takes the earlier one's virtual servers over through the other back end's
// ledger (nothing re-created), removes the other back end's marked objects
// only once its own rules are in place, and never kube-proxy's. The
// Services answer throughout.
func TestIntegrationSwitchingBackEnds(t *testing.T) {
	ctx := context.Background()
	tp := newTopology(t, 1, 2)
	tp.addForeign(t)
	c1, b1, b2 := tp.clients[0], tp.backends[0], tp.backends[1]
	tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\nsysctl -qw net.ipv4.ip_forward=1\n"+
		"iptables-restore --noflush <<'EOF'\n"+kubeProxyIPTables+"EOF\n"+
		"ipset restore <<'EOF'\n"+kubeProxyIPSets+"EOF\n")
	want := tp.theirs(t)
	s := State{Services: map[string]Service{"web": {
		ClusterIPs: []netip.Addr{a("198.18.100.1")},
		Ports:      []Port{portHTTP},
		Endpoints:  tp.endpoints(true, false, []int{0, 1}),
	}}}
	web := ap("198.18.100.1:80")
	var last *nodeKit
	// The VIP mode switches too: from addresses to routes with the back
	// end, then the back end alone, then both back.
	for i, v := range []variant{{IPTables, VIPAddresses}, {NFTables, VIPLocalRoutes}, {IPTables, VIPLocalRoutes}, {NFTables, VIPAddresses}} {
		be := v.be
		k := tp.newProxier(t, Config{Backend: be, VIPMode: v.mode})
		res := k.sync(t, s)
		if i > 0 {
			// A new VIP mode binds the VIP in its form (and removes the
			// old one after); nothing else changes.
			wantBind := 0
			if v.mode != last.p.cfg.VIPMode {
				wantBind = 1
			}
			if n := res.Plan.IPVSAdd.Len() + res.Plan.IPVSDelete.Len() + len(res.Plan.Unbind); n != 0 || len(res.Plan.Bind) != wantBind {
				t.Errorf("switch to %v: %d IPVS changes and unbinds, %d binds; want none and %d:\n%s", v, n, len(res.Plan.Bind), wantBind, res.Plan)
			}
		}
		wantCounts(t, "ours under "+be.String(), c1.tcp(t, web, 4), map[string]int{b1.name: 2, b2.name: 2})
		wantCounts(t, "kube-proxy's under "+be.String(), c1.tcp(t, theirWeb, 2), map[string]int{b1.name: 2})
		snap := tp.snapshot(t)
		other := VIPAddresses
		if v.mode == VIPAddresses {
			other = VIPLocalRoutes
		}
		if got, old := snap.vipsOn(DefaultLinkName, v.mode), snap.vipsOn(DefaultLinkName, other); !slices.Equal(got, []string{"198.18.100.1/32"}) || len(old) != 0 {
			t.Errorf("under %v: VIPs held as %v %v, as %v %v; want only the first, 198.18.100.1", v, v.mode, got, other, old)
		}
		nft := strings.Contains(snap["nft"], "table ip ipvskit")
		ipt := strings.Contains(snap["ipset"], "IPVSKIT-") || strings.Contains(snap["iptables-legacy"]+snap["iptables-nft"], "IPVSKIT-")
		if nft != (be == NFTables) || ipt != (be == IPTables) {
			t.Errorf("under %v: nft table %v, iptables objects %v; want only the back end in use", be, nft, ipt)
		}
		if got := tp.theirs(t); got != want {
			t.Errorf("kube-proxy's objects changed under %v (-want +got):\n%s", be, lineDiff(want, got))
		}
		last = k
	}
	must(t, last.p.Cleanup(ctx))
	if got := tp.theirs(t); got != want {
		t.Errorf("kube-proxy's objects changed by Cleanup (-want +got):\n%s", lineDiff(want, got))
	}
	wantCounts(t, "kube-proxy's after Cleanup", c1.tcp(t, theirWeb, 2), map[string]int{b1.name: 2})
}
