package netnstest_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/netnstest"
)

// A kernel test of a program that serves 198.18.100.1:80 from a backend:
// a node for the program, a client and a backend, each in a namespace of
// its own, gone when the test ends.
func Example() {
	var t *testing.T // the test's own, in a TestXxx function
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	node := netnstest.New(t) // skips unless root
	node.Sysctl(t, "net/ipv4/ip_forward", "1")
	client := node.Peer(t, "client", netip.MustParsePrefix("198.18.0.1/24"), netip.MustParsePrefix("198.18.0.2/24"))
	backend := node.Peer(t, "backend", netip.MustParsePrefix("198.18.1.1/24"), netip.MustParsePrefix("198.18.1.2/24"))
	server := backend.ServeTCP(t, netip.MustParseAddrPort("198.18.1.2:8080"), "backend-1")

	// Start the program under test in the node's namespace here, e.g.
	// proxier.Open(ctx, cfg, node.Handle()) and a Sync of a State whose
	// service 198.18.100.1:80 has the endpoint 198.18.1.2:8080.

	got, err := client.DialTCP(ctx, t, netip.MustParseAddrPort("198.18.100.1:80"))
	if err != nil || got != "backend-1" {
		t.Errorf("through the program: %q, %v", got, err)
	}
	t.Logf("the backend saw %v", server.Peers()) // the client's address, or the node's when masqueraded
}
