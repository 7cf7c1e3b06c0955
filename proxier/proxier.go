package proxier

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/sysctl"
)

// DefaultInstance is the instance name when Config.Instance is empty.
const DefaultInstance = names.DefaultInstance

// DefaultLinkName is the VIP link's name when Config.LinkName and
// Config.Instance are empty.
const DefaultLinkName = "ipvskit0"

// Proxier makes a network namespace serve a State. It remembers what it last
// applied and sends only the difference; a sync with no change sends nothing.
// It is safe for concurrent use; syncs run one at a time.
type Proxier struct {
	cfg     Config
	clients                  // the kernel clients, embedded: p.ipvs, p.link, ...
	now     func() time.Time // the clock; tests set it

	mu      sync.Mutex // held by every call: one at a time changes what follows
	kernel  knowledge  // what the kernel is known to hold of the Proxier's
	serving serving    // what the Proxier serves
	pending pending    // drains and stale flows, left for later
	syncd   daemons    // the sync daemons it runs (Config.SyncDaemons)
}

// clients are the kernel clients a Proxier works through (Deps), and the
// closers of those Open opened.
type clients struct {
	ipvs  IPVS
	link  Link
	vips  vipHolder // how VIPs are held on the link (Config.VIPMode)
	sys   Sysctls
	rules map[Family]Rules
	ct    Conntrack // nil: no flow cleanup
	// daemonc runs the sync daemons (Config.SyncDaemons): Deps.IPVS, nil
	// when none are configured.
	daemonc DaemonClient
	// closers close the clients Open opened (nil for New); Close runs
	// them once.
	closers closers
}

// serving is what the Proxier serves.
type serving struct {
	// sv is the State of the last Sync or Update that passed validation,
	// service by service: what Update changes. Nil before the first.
	sv *served
	// warns are the warnings of the services of sv, as last logged.
	warns warnings
}

// Deps are the kernel clients a Proxier works through. Each must be set:
// the real clients (ipvs.New, dummy.New, sysctl.New, and a netfilter back
// end per enabled family, iptables.NewNFTables or iptables.NewIPTables, all
// for the same namespace) or fakes for unit tests. The Proxier does not
// close them.
type Deps struct {
	// IPVS must also be a DaemonClient when Config.SyncDaemons is set.
	IPVS    IPVS
	Link    Link
	Sysctls Sysctls
	// Rules has a back end for each family the Config enables.
	Rules map[Family]Rules
	// Conntrack, if set (conntrack.New for the same namespace), deletes
	// stale UDP and SCTP flows after each sync that changed the
	// destinations of such a frontend. Nil means no cleanup.
	Conntrack Conntrack
}

// New returns a Proxier for cfg (nil means the zero Config) working through
// deps. It touches nothing until the first Sync.
func New(cfg *Config, deps Deps) (*Proxier, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.IPVS == nil || deps.Link == nil || deps.Sysctls == nil {
		return nil, errors.New("proxier: Deps needs IPVS, Link and Sysctls")
	}
	for f := range enabledFamilies(cfg) {
		if deps.Rules[f] == nil {
			return nil, fmt.Errorf("proxier: Deps.Rules has no back end for %v, which the config enables", f)
		}
	}
	vips, err := newVIPHolder(cfg.VIPMode, deps.Link)
	if err != nil {
		return nil, err
	}
	if _, ok := deps.Link.(adopter); cfg.AdoptKubeProxy && !ok {
		return nil, fmt.Errorf("proxier: AdoptKubeProxy needs a Deps.Link with Adopt (such as *dummy.Client); %T has none", deps.Link)
	}
	var dc DaemonClient
	if len(cfg.SyncDaemons) > 0 {
		var ok bool
		if dc, ok = deps.IPVS.(DaemonClient); !ok {
			return nil, fmt.Errorf("proxier: Config.SyncDaemons needs a Deps.IPVS with Daemons, StartDaemon and StopDaemon (such as *ipvs.Client); %T has none", deps.IPVS)
		}
	}
	c := *cfg
	c.SyncDaemons = slices.Clone(cfg.SyncDaemons)
	if c.Instance == "" {
		c.Instance = DefaultInstance
	}
	if c.LinkName == "" {
		c.LinkName = names.Link(c.Instance, c.KubeProxyNames)
	}
	return &Proxier{cfg: c, now: time.Now,
		clients: clients{ipvs: deps.IPVS, link: deps.Link, vips: vips, sys: deps.Sysctls, rules: deps.Rules, ct: deps.Conntrack, daemonc: dc},
		kernel:  newKnowledge(c.AdoptKubeProxy), pending: pending{flows: map[ipvs.ServiceKey]bool{}}}, nil
}

// adopter is the link client's Adopt (Config.AdoptKubeProxy).
type adopter interface {
	Adopt(ctx context.Context, name string) error
}

// Result says what a Sync did.
type Result struct {
	// Plan is what was applied (or, if the sync failed, what was tried).
	Plan *Plan
	// SysctlChanges are the sysctls the first sync changed.
	SysctlChanges []sysctl.Change
	// LinkCreated says the first sync created the VIP link.
	LinkCreated bool
	// Phases is where the sync's time went.
	Phases Phases
	// Draining is how many destinations are draining after the sync (the
	// drain queue's length; see Drain).
	Draining int
	// SetElements and RuleWrites are what the netfilter back ends sent:
	// set members added or deleted, and rule writes (iptables-restore runs
	// or nftables chain and rule messages), as each back end's LastStats
	// reports its Apply calls, a failed one included (what it sent before
	// it failed; see iptables.ApplyStats). After a failure, the applies
	// the sync never reached count nothing.
	SetElements, RuleWrites int
	// ConntrackDeleted is how many stale UDP and SCTP flows the sync
	// deleted (see Deps.Conntrack), as the client reports, also when it
	// fails part way.
	ConntrackDeleted int
	// Warnings list what the State asks for that has no effect (see
	// Warning), by service ID: for Sync, those of every service of the
	// State; for Update, those of the services it was given. They are
	// set once the State passed validation, also if the sync then fails.
	Warnings []Warning

	// sent is what went to the IPVS and VIP link clients (SyncEvent.Ops).
	sent sentCounts
}

// Phases is the time a sync spent in each phase.
type Phases struct {
	Validate  time.Duration // checking the State
	Plan      time.Duration // computing the wanted kernel state and the diff
	Start     time.Duration // first sync: VIP link, sysctls, reading back what it owns
	Sets      time.Duration // netfilter set elements (when the back end tells them apart)
	Rules     time.Duration // netfilter rules (and sets, when not told apart), before and after
	IPVS      time.Duration // virtual servers and destinations
	Addresses time.Duration // binding and unbinding VIPs on the VIP link
	Conntrack time.Duration // deleting stale flows
}

// String renders the plan as the reference tools' input.
func (pl *Plan) String() string {
	s, err := pl.render(pl.linkName)
	if err != nil {
		return "# cannot render plan: " + err.Error()
	}
	return s
}

// Cleanup removes everything the proxier owns and nothing else: the virtual
// servers in its ledger or applied by this Proxier, the VIP link (if it
// carries the link client's mark), each back end's marked rules and
// sets, and the sync daemons of Config.SyncDaemons it runs or that run as
// configured (first: they depend on nothing else). Another program's
// objects, even of the proxier's names, are left alone. The next Sync
// starts afresh.
func (p *Proxier) Cleanup(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.stopDaemons(ctx); err != nil {
		return err
	}
	l, err := p.readLedger(ctx, true)
	if err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	owned := map[ipvs.ServiceKey]bool{}
	for k := range l.servers {
		// A refused one is someone else's, though the ledger has it.
		owned[k] = !p.kernel.refused[k]
	}
	if p.kernel.applied != nil {
		for k := range p.kernel.applied.servers {
			owned[k] = true
		}
	}
	for k := range owned {
		if !owned[k] || p.excluded(k.Addr) {
			delete(owned, k) // never ours (Config.ExcludeCIDRs)
		}
	}
	svcs, err := p.services(ctx, owned)
	if err != nil {
		return opErr(SubsystemIPVS, fmt.Errorf("cleanup: reading: %w", err))
	}
	var b ipvs.Batch
	for _, si := range svcs {
		if k := si.Service.Key(); owned[k] {
			b.DeleteService(k)
		}
	}
	// The virtual servers go before the link and the rules: the ledger is
	// in the rules, so a Cleanup that fails part way still finds them when
	// it is run again, by this Proxier or another.
	if b.Len() > 0 {
		if err := p.ipvs.Apply(ctx, &b); err != nil {
			return opErr(SubsystemIPVS, fmt.Errorf("cleanup: %w", err))
		}
	}
	// A link of the name that is not ours (fs.ErrExist) stays, as does
	// every address on it. So does ours while it holds an address inside
	// ExcludeCIDRs: only the VIPs the proxier owns leave it.
	keep, err := p.excludedOnLink(ctx)
	if err != nil {
		return opErr(SubsystemAddresses, fmt.Errorf("cleanup: reading VIP link %s: %w", p.cfg.LinkName, err))
	}
	if keep {
		if err := p.unbindOwned(ctx, l); err != nil {
			return opErr(SubsystemAddresses, fmt.Errorf("cleanup: unbinding VIPs from %s: %w", p.cfg.LinkName, err))
		}
	} else if err := p.link.Delete(ctx, p.cfg.LinkName); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrExist) {
		return opErr(SubsystemAddresses, fmt.Errorf("cleanup: deleting VIP link %s: %w", p.cfg.LinkName, err))
	}
	for _, f := range []Family{IPv4, IPv6} {
		if r := p.rules[f]; r != nil {
			// Objects of the back end's names that are not its own
			// (fs.ErrExist) are another program's: left, not an error.
			if err := r.Cleanup(ctx); err != nil && !errors.Is(err, fs.ErrExist) {
				return opErr(SubsystemRules, fmt.Errorf("cleanup: %v: %w", f, err))
			}
		}
	}
	p.kernel.forget()
	p.pending.drains = nil
	p.serving = serving{} // and the next Sync's warnings are logged again
	return nil
}

// Close closes the kernel clients Open opened, once: later calls return nil,
// and calls of other methods fail with the closed clients' errors. It leaves
// the kernel as it is (Cleanup removes what the Proxier owns), so a program
// that starts again takes over where this one stopped. A Proxier made by New
// closes nothing: its Deps are the caller's, to close.
func (p *Proxier) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.closers
	p.closers = nil
	return c.close()
}
