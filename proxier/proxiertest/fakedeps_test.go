package proxiertest_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
)

func webState() *proxier.State {
	return &proxier.State{Services: map[string]proxier.Service{"web": {
		ClusterIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
		Endpoints:  []proxier.Endpoint{{Addr: netip.MustParseAddr("198.18.1.1"), Ready: true}},
	}}}
}

// A dry run with no kernel: the plan of the first Sync on an empty node,
// and what the node's IPVS table would then be.
func ExampleNewFakeDeps() {
	cfg := &proxier.Config{}
	fakes := proxiertest.NewFakeDeps(cfg)
	p, err := proxier.New(cfg, fakes.Deps())
	if err != nil {
		panic(err)
	}
	res, err := p.Sync(context.Background(), webState())
	if err != nil {
		panic(err) // a *proxier.ValidationError lists every problem of the State
	}
	_ = res.Plan // its String is the plan: nft script, ipvsadm -R lines, ip commands
	fmt.Print(fakes.IPVS.Dump())
	// Output:
	// -A -t 198.18.100.1:80 -s rr
	// -a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1
}

// The plan's netfilter rules are rendered as the Config's back end writes
// them, for each family it enables, under its instance's names.
func TestFakeDepsRenderAsTheBackend(t *testing.T) {
	for _, tc := range []struct {
		cfg  proxier.Config
		want []string
	}{
		{proxier.Config{}, []string{"table ip ipvskit {"}},
		{proxier.Config{Instance: "lb"}, []string{"table ip lb {"}},
		{proxier.Config{Backend: proxier.IPTables, Instance: "lb"}, []string{"*nat\n", ":LB-SERVICES"}},
		{proxier.Config{Families: []proxier.Family{proxier.IPv4, proxier.IPv6}}, []string{"table ip ipvskit {", "table ip6 ipvskit {"}},
	} {
		fakes := proxiertest.NewFakeDeps(&tc.cfg)
		if len(fakes.Rules) != max(1, len(tc.cfg.Families)) {
			t.Errorf("%+v: rules fakes for %d families", tc.cfg, len(fakes.Rules))
		}
		p, err := proxier.New(&tc.cfg, fakes.Deps())
		if err != nil {
			t.Fatal(err)
		}
		plan, err := p.Plan(webState())
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(plan.String(), w) {
				t.Errorf("%+v: the plan has no %q:\n%s", tc.cfg, w, plan)
			}
		}
	}
}

// A node's IPVS table from ipvsadm -Sn: another program's virtual server
// is kept, one at the State's VIP:port is a conflict, and a text that is
// not ipvsadm's is refused.
func TestFakeDepsLoadIPVS(t *testing.T) {
	ctx := context.Background()
	fakes := proxiertest.NewFakeDeps(nil)
	if err := fakes.LoadIPVS(ctx, []byte("-A -u 198.18.200.1:53 -s rr\n-a -u 198.18.200.1:53 -r 198.18.2.1:53 -m -w 2\n")); err != nil {
		t.Fatal(err)
	}
	p, err := proxier.New(nil, fakes.Deps())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Sync(ctx, webState()); err != nil {
		t.Fatal(err)
	}
	if d := fakes.IPVS.Dump(); !strings.Contains(d, "-a -u 198.18.200.1:53 -r 198.18.2.1:53 -m -w 2\n") || !strings.Contains(d, "-A -t 198.18.100.1:80 -s rr\n") {
		t.Errorf("the table after the sync:\n%s", d)
	}

	clash := proxiertest.NewFakeDeps(nil)
	if err := clash.LoadIPVS(ctx, []byte("-A -t 198.18.100.1:80 -s wlc\n")); err != nil {
		t.Fatal(err)
	}
	p, _ = proxier.New(nil, clash.Deps())
	var ce *proxier.ConflictError
	if _, err := p.Sync(ctx, webState()); !errors.As(err, &ce) {
		t.Errorf("a foreign virtual server at the State's VIP:port: %v", err)
	}
	if err := clash.LoadIPVS(ctx, []byte("-A -t nowhere\n")); err == nil {
		t.Error("a text that is not ipvsadm's: no error")
	}
}
