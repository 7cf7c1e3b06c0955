package proxiertest

import (
	"context"
	"fmt"

	"github.com/ipvskit/ipvskit/conntrack/conntracktest"
	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// FakeDeps are in-memory fakes of every kernel client a Proxier works
// through, standing for an empty node: no virtual servers, no VIP link,
// no rules, the sysctls of a fresh namespace. Each fake has the kernel's
// semantics and errors (see its package), so a Proxier over them
// validates, plans and "applies" as it would on a node, with no root, no
// IPVS and no other kernel feature. Read what a Sync left with each
// fake's Dump.
type FakeDeps struct {
	IPVS      *ipvstest.Fake
	Link      *dummytest.Fake
	Sysctls   *sysctltest.Fake
	Rules     map[proxier.Family]*iptablestest.Fake // one per family the Config enables
	Conntrack *conntracktest.Fake

	render renderer
}

// NewFakeDeps returns the fakes a Proxier made by proxier.New(cfg, ...)
// needs (a nil cfg is the zero Config, as for proxier.New): a rules fake
// for each family cfg enables. A plan over them renders its netfilter
// rules as cfg.Backend's real back end would for cfg's instance (an
// iptables-save text or an nft script), which makes
//
//	f := proxiertest.NewFakeDeps(cfg)
//	p, err := proxier.New(cfg, f.Deps())
//	plan, err := p.Plan(state)
//
// a dry run that needs no kernel: it prints what the first Sync on an
// empty node would apply. Only KubeProxyNames under NFTables is rendered
// with the instance's table name rather than kube-proxy's.
func NewFakeDeps(cfg *proxier.Config) *FakeDeps {
	if cfg == nil {
		cfg = &proxier.Config{}
	}
	f := &FakeDeps{
		IPVS: ipvstest.New(), Link: dummytest.New(), Sysctls: sysctltest.New(""),
		Rules: map[proxier.Family]*iptablestest.Fake{}, Conntrack: conntracktest.New(),
		render: renderer{backend: cfg.Backend, instance: cfg.Instance, kubeProxyNames: cfg.KubeProxyNames},
	}
	fams := cfg.Families
	if len(fams) == 0 {
		fams = []proxier.Family{proxier.IPv4}
	}
	for _, fam := range fams {
		f.Rules[fam] = iptablestest.New(fam)
	}
	return f
}

// Deps returns the fakes as proxier.New takes them.
func (f *FakeDeps) Deps() proxier.Deps {
	d := proxier.Deps{IPVS: f.IPVS, Link: f.Link, Sysctls: f.Sysctls, Conntrack: f.Conntrack,
		Rules: make(map[proxier.Family]proxier.Rules, len(f.Rules))}
	for fam, r := range f.Rules {
		d.Rules[fam] = &renderedRules{Fake: r, render: f.render, fam: fam}
	}
	return d
}

// LoadIPVS makes the IPVS fake hold what an `ipvsadm -Sn` (or -R) text
// says, for a plan from a node that already has virtual servers: another
// program's, which the Proxier must leave alone (a VIP:port of the State
// that one of them holds is a conflict), or a kube-proxy's to take over.
func (f *FakeDeps) LoadIPVS(ctx context.Context, text []byte) error {
	var b ipvs.Batch
	if err := ipvsadm.UnmarshalBatch(text, &b); err != nil {
		return fmt.Errorf("proxiertest: reading the IPVS table: %w", err)
	}
	if err := f.IPVS.Apply(ctx, &b); err != nil {
		return fmt.Errorf("proxiertest: loading the IPVS table: %w", err)
	}
	return nil
}

// renderer renders a ruleset as a real back end of a Config would.
type renderer struct {
	backend        proxier.Backend
	instance       string
	kubeProxyNames bool
}

// renderedRules is a rules fake whose Render is the real back end's.
type renderedRules struct {
	*iptablestest.Fake
	render renderer
	fam    proxier.Family
}

func (r *renderedRules) Render(rs *iptables.Ruleset) (string, error) {
	if r.render.backend == proxier.IPTables {
		return iptables.RenderIPTables(rs, &iptables.IPTablesConfig{Family: r.fam, Instance: r.render.instance, KubeProxyNames: r.render.kubeProxyNames})
	}
	return iptables.RenderNFT(rs, r.render.instance)
}
