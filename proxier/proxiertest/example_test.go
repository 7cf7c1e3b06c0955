package proxiertest_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// A Proxier over wrapped fakes: list the operations of a sync, fail one of
// them, and see the next sync converge.
func Example() {
	ctx := context.Background()
	fake := ipvstest.New()
	in := proxiertest.New()
	deps := in.Wrap(proxier.Deps{
		IPVS: fake, Link: dummytest.New(), Sysctls: sysctltest.New(""),
		Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: iptablestest.New(iptables.IPv4)},
	})
	p, err := proxier.New(nil, deps)
	if err != nil {
		panic(err)
	}
	state := proxier.State{Services: map[string]proxier.Service{
		"web": {
			ClusterIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
			Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
			Endpoints: []proxier.Endpoint{
				{Addr: netip.MustParseAddr("198.18.1.1"), Ready: true},
				{Addr: netip.MustParseAddr("198.18.1.2"), Ready: true},
			},
		},
	}}
	if _, err := p.Sync(ctx, &state); err != nil {
		panic(err)
	}
	for _, op := range in.Ops() {
		if op.Call == "IPVS.Apply" || op.Call == "Link.Update" { // the writes, one per request
			fmt.Printf("%s: %s\n", op.Call, op.Desc)
		}
	}

	// A new endpoint: the sync's one IPVS request fails.
	web := state.Services["web"]
	web.Endpoints = append(web.Endpoints, proxier.Endpoint{Addr: netip.MustParseAddr("198.18.1.3"), Ready: true})
	state.Services["web"] = web
	in.Reset()
	in.FailFirst(proxiertest.At(proxier.SubsystemIPVS, 0), proxiertest.CutShort)
	_, err = p.Sync(ctx, &state)
	var oe *proxier.OpError
	fmt.Println(errors.As(err, &oe), oe.Subsystem, errors.Is(err, proxiertest.ErrInjected))

	// The next sync reads back what the proxier owns and repairs it.
	if _, err := p.Sync(ctx, &state); err != nil {
		panic(err)
	}
	fmt.Print(fake.Dump())
	// Output:
	// IPVS.Apply: add service tcp 198.18.100.1:80
	// IPVS.Apply: add destination tcp 198.18.100.1:80 destination 198.18.1.1:8080
	// IPVS.Apply: add destination tcp 198.18.100.1:80 destination 198.18.1.2:8080
	// Link.Update: bind 198.18.100.1 on ipvskit0
	// true ipvs true
	// -A -t 198.18.100.1:80 -s rr
	// -a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1
	// -a -t 198.18.100.1:80 -r 198.18.1.2:8080 -m -w 1
	// -a -t 198.18.100.1:80 -r 198.18.1.3:8080 -m -w 1
}
