package proxier_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"

	"github.com/ipvskit/ipvskit/proxier"
	"github.com/vishvananda/netns"
)

// A Proxier for a named network namespace (ip netns add node), with the
// iptables back end, serving one service. One Close closes every client
// Open opened; Cleanup, when the program is done for good, removes what the
// Proxier made.
func ExampleOpen() {
	ctx := context.Background()
	ns, err := netns.GetFromName("node") // 0 would mean this process's namespace
	if err != nil {
		log.Fatal(err)
	}
	defer ns.Close() // Open keeps a copy
	p, err := proxier.Open(ctx, &proxier.Config{Backend: proxier.IPTables}, ns)
	if err != nil {
		log.Fatal(err) // names the client that could not be opened
	}
	defer p.Close()
	state := proxier.State{Services: map[string]proxier.Service{
		"default/web": {
			ClusterIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
			Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
			Endpoints:  []proxier.Endpoint{{Addr: netip.MustParseAddr("198.18.1.1"), Ready: true}},
		},
	}}
	res, err := p.Sync(ctx, &state)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Plan)
}
