package proxier

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"sync"
	"time"

	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/ipvskit/ipvskit/iptables"
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
	cfg   Config
	ipvs  IPVS
	link  Link
	vips  vipHolder // how VIPs are held on the link (Config.VIPMode)
	sys   Sysctls
	rules map[Family]Rules
	ct    Conntrack // nil: no flow cleanup

	mu       sync.Mutex
	started  bool           // the link and sysctls were ensured
	profile  sysctl.Profile // the sysctl profile start applied
	applied  *desired       // what the kernel has, as far as the proxier knows
	readBack bool           // a failed apply left the kernel unknown: read it first
	// foreign are virtual servers, at keys the State asked for, that the
	// proxier did not create, as of the last read.
	foreign map[ipvs.ServiceKey]ipvs.Service
	// draining are the destinations at weight 0 that Drain deletes once
	// idle or past MaxDrain (drain.go).
	draining drainList
	now      func() time.Time // the clock; tests set it
	// ctPending are the datagram frontends whose stale flows are still to
	// be deleted (see conntrack.go).
	ctPending map[ipvs.ServiceKey]bool
	// ledger is the ownership ledger start read, for the read back that
	// follows it; nil otherwise.
	ledger *ledger
	// refused are keys whose virtual server someone else created between
	// a read and an add: in the ledger (written before the add) but never
	// ours.
	refused map[ipvs.ServiceKey]bool
	// adopting, until a Sync succeeds, takes kube-proxy's link and
	// virtual servers as the Proxier's (Config.AdoptKubeProxy).
	adopting bool
	// closers close the clients Open opened (nil for New); Close runs
	// them once.
	closers closers
	// sv is the State of the last Sync or Update that passed validation,
	// service by service: what Update changes. Once a sync succeeded and
	// until one fails, applied is sv.model.
	sv *served
	// oldVIPs are VIPs the proxier owns that the last read found held in
	// the other VIPMode (an earlier run's): apply removes them once it has
	// added its own form.
	oldVIPs []netip.Addr
	// held is how many of its virtual servers and VIPs the kernel holds,
	// as far as the Proxier knows (SyncEvent.VirtualServers and VIPs).
	held held
	// warns are the warnings of the services of sv, as last logged.
	warns warnings
}

// Deps are the kernel clients a Proxier works through. Each must be set:
// the real clients (ipvs.New, dummy.New, sysctl.New, and a netfilter back
// end per enabled family, iptables.NewNFTables or iptables.NewIPTables, all
// for the same namespace) or fakes for unit tests. The Proxier does not
// close them.
type Deps struct {
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
	c := *cfg
	if c.Instance == "" {
		c.Instance = DefaultInstance
	}
	if c.LinkName == "" {
		c.LinkName = names.Link(c.Instance, c.KubeProxyNames)
	}
	return &Proxier{cfg: c, ipvs: deps.IPVS, link: deps.Link, vips: vips, sys: deps.Sysctls, rules: deps.Rules, now: time.Now,
		ct: deps.Conntrack, ctPending: map[ipvs.ServiceKey]bool{}, refused: map[ipvs.ServiceKey]bool{},
		adopting: c.AdoptKubeProxy}, nil
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
	// it failed; see iptables.ApplyStats). A back end that does not report
	// them counts one write per Apply call made, a failed one included.
	// After a failure, the applies the sync never reached count nothing.
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

// Plan validates s and returns what a Sync would do, without touching the
// kernel (a dry run). Its String is the plan as ipvsadm and ip lines.
func (p *Proxier) Plan(s *State) (*Plan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := s.Validate(&p.cfg); err != nil {
		return nil, err
	}
	want := compute(s, &p.cfg)
	overlayDrains(p.applied, want, p.draining, p.now())
	pl := makePlan(p.applied, want)
	pl.linkName, pl.vipMode, pl.backends = p.cfg.LinkName, p.cfg.VIPMode, p.rules
	return pl, nil
}

// String renders the plan as the reference tools' input.
func (pl *Plan) String() string {
	s, err := pl.render(pl.linkName)
	if err != nil {
		return "# cannot render plan: " + err.Error()
	}
	return s
}

// Sync makes the kernel serve s. It validates all of s first and applies
// nothing if anything is invalid (the error is a *ValidationError). Then it
// applies the difference from what it last applied, in an order that never
// opens a VIP before its virtual servers exist, and removes in reverse.
// A failure part way is returned; the next Sync reads back the objects the
// proxier owns and repairs them.
func (p *Proxier) Sync(ctx context.Context, s *State) (res *Result, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sync(ctx, s, nil)
}

// syncFull is Sync of the whole of s, when the kernel is not known (the
// first sync, after a failure) or the node changed: it validates s,
// computes all of it, and diffs it with what the kernel holds.
func (p *Proxier) syncFull(ctx context.Context, s *State, res *Result, t time.Time) error {
	lap := func(d *time.Duration) { now := time.Now(); *d += now.Sub(t); t = now }
	if err := s.Validate(&p.cfg); err != nil {
		return err
	}
	lap(&res.Phases.Validate)
	p.sv = build(s, &p.cfg)
	p.warnAll(s)
	want := p.sv.model
	lap(&res.Phases.Plan)
	// After a failure the kernel is unknown: the VIP link may be gone too
	// (someone deleted it), so it is ensured again before the read back.
	if !p.started || p.readBack {
		if err := p.start(ctx, res); err != nil {
			return err
		}
	}
	if p.readBack {
		have, err := p.read(ctx, want)
		if err != nil {
			return err
		}
		p.applied, p.readBack, p.held = have, false, heldOf(have)
	}
	lap(&res.Phases.Start)
	if err := conflicts(want, p.foreign); err != nil {
		p.readBack = true // the foreign virtual server may go away
		return err
	}
	drains := overlayDrains(p.applied, want, p.draining, p.now())
	plan := makePlan(p.applied, want)
	plan.linkName, plan.vipMode, plan.backends = p.cfg.LinkName, p.cfg.VIPMode, p.rules
	res.Plan = plan
	lap(&res.Phases.Plan)
	// Tried or done, these are the drains: one whose weight-0 update
	// failed is read back and joins again, keeping its start time.
	p.draining, res.Draining = drains, drains.len()
	if p.ct != nil {
		// Before applying: a failed apply leaves them pending too.
		staleFrontends(p.applied, plan, p.ctPending)
	}
	before := p.held
	if err := p.apply(ctx, plan, res); err != nil {
		p.readBack, p.held = true, before.plus(res.sent)
		// What it may now own, to read back; rules unknown. A virtual
		// server that could not be added because it exists is someone
		// else's: the read back decides.
		p.applied = union(p.applied, want)
		for _, k := range existing(err) {
			delete(p.applied.servers, k)
			p.refused[k] = true
		}
		return err
	}
	p.applied, p.adopting, p.held = want, false, heldOf(want)
	if err := p.cleanFlows(ctx, res); err != nil {
		return err
	}
	return nil
}

// start reads the ownership ledger, ensures the VIP link and the sysctl
// profile (with IPv6 forwarding when IPv6 is served), once, and after a
// failure.
func (p *Proxier) start(ctx context.Context, res *Result) error {
	// The ledger first: it proves the back ends' objects are ours (or
	// absent) before the link or a sysctl is touched.
	l, err := p.readLedger(ctx, false)
	if err != nil {
		return err
	}
	p.ledger = l
	if a, ok := p.link.(adopter); ok && p.adopting {
		if err := a.Adopt(ctx, p.cfg.LinkName); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return opErr(SubsystemAddresses, fmt.Errorf("adopting kube-proxy's VIP link %s: %w", p.cfg.LinkName, err))
		}
	}
	created, err := p.link.Ensure(ctx, p.cfg.LinkName)
	if err != nil {
		return opErr(SubsystemAddresses, fmt.Errorf("VIP link %s: %w", p.cfg.LinkName, err))
	}
	res.LinkCreated = created
	profile, err := p.sys.IPVSProfile(&sysctl.IPVSOptions{StrictARP: p.cfg.StrictARP, IPv6: enabledFamilies(&p.cfg)[IPv6]})
	if err != nil {
		return opErr(SubsystemSysctl, fmt.Errorf("profile: %w", err))
	}
	if res.SysctlChanges, err = p.sys.Apply(ctx, profile); err != nil {
		return opErr(SubsystemSysctl, err)
	}
	p.started, p.profile = true, profile
	p.readBack = true // learn what an earlier run left behind, once
	if p.applied == nil {
		p.applied = &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{}}
	}
	return nil
}

// apply sends the plan phase by phase: additions (virtual servers, then
// VIPs), then removals (VIPs, then virtual servers).
func (p *Proxier) apply(ctx context.Context, pl *Plan, res *Result) error {
	ph := &res.Phases
	t := time.Now()
	lap := func(d *time.Duration) { now := time.Now(); *d += now.Sub(t); t = now }
	if len(pl.SetChanges) > 0 {
		// Whatever fails, the live rulesets end as the served State
		// says: a failed sync makes the next one read back and apply
		// them whole.
		defer pl.settle()
	}
	if err := p.applyRules(ctx, pl.Rules, res); err != nil {
		return err
	}
	if err := p.applyRules(ctx, pl.changeSets(false), res); err != nil {
		return err
	}
	lap(&ph.Rules)
	if pl.IPVSAdd.Len() > 0 {
		if err := p.applyIPVS(ctx, &pl.IPVSAdd, res); err != nil {
			if undo := undoOnForeign(&pl.IPVSAdd, err); undo != nil {
				if uerr := p.applyIPVS(ctx, undo, res); uerr != nil {
					err = errors.Join(err, fmt.Errorf("taking back destinations added to foreign virtual servers: %w", uerr))
				}
			}
			return opErr(SubsystemIPVS, err)
		}
	}
	lap(&ph.IPVS)
	// One batched call each: binding 10,000 VIPs is a few sends.
	if len(pl.Bind) > 0 {
		if err := p.updateVIPs(ctx, pl.Bind, nil, res); err != nil {
			return opErr(SubsystemAddresses, fmt.Errorf("binding VIPs: %w", err))
		}
	}
	// Held in the other VIPMode by an earlier run: gone only now that
	// this mode's form is there.
	if len(p.oldVIPs) > 0 {
		n, err := p.vips.removeOld(ctx, p.cfg.LinkName, p.oldVIPs)
		res.sent.addrs += n
		if err != nil {
			// Removing the addresses may have taken the link's IPv4
			// local routes, this mode's VIPs, with them, and adding
			// them back failed: which are left is unknown.
			res.sent.unsure = res.sent.unsure || (n > 0 && p.cfg.VIPMode == VIPLocalRoutes)
			return opErr(SubsystemAddresses, fmt.Errorf("removing VIPs held in the other VIP mode: %w", err))
		}
		p.oldVIPs = nil
	}
	if len(pl.Unbind) > 0 {
		if err := p.updateVIPs(ctx, nil, pl.Unbind, res); err != nil {
			return opErr(SubsystemAddresses, fmt.Errorf("unbinding VIPs: %w", err))
		}
	}
	lap(&ph.Addresses)
	if pl.IPVSDelete.Len() > 0 {
		if err := p.applyIPVS(ctx, &pl.IPVSDelete, res); err != nil {
			return opErr(SubsystemIPVS, err)
		}
	}
	lap(&ph.IPVS)
	err := p.applyRules(ctx, pl.RulesAfter, res)
	if err == nil {
		err = p.applyRules(ctx, pl.changeSets(true), res)
	}
	lap(&ph.Rules)
	return err
}

// applyIPVS sends b and counts in res what was sent and the virtual
// servers added and deleted.
func (p *Proxier) applyIPVS(ctx context.Context, b *ipvs.Batch, res *Result) error {
	err := p.ipvs.Apply(ctx, b)
	o := ipvsOutcome(b, err)
	res.sent.ipvs += o.sent
	res.sent.servers += serverChanges(b, o)
	return err
}

// updateVIPs binds add and unbinds remove and counts in res what was sent
// and the VIPs bound and unbound.
func (p *Proxier) updateVIPs(ctx context.Context, add, remove []netip.Addr, res *Result) error {
	err := p.vips.update(ctx, p.cfg.LinkName, add, remove)
	o := linkOutcome(len(add)+len(remove), err)
	res.sent.addrs += o.sent
	res.sent.vips += vipChanges(add, remove, o)
	return err
}

// statsReporter is a netfilter back end that says what its last Apply sent:
// both of package iptables do.
type statsReporter interface{ LastStats() iptables.ApplyStats }

// applyRules applies each family's ruleset in m. What the back ends report
// of their work goes into res: set elements and rule writes, and the time
// spent on sets, which moves from the Rules phase to the Sets phase.
func (p *Proxier) applyRules(ctx context.Context, m map[Family]*iptables.Ruleset, res *Result) error {
	for _, f := range []Family{IPv4, IPv6} {
		r := m[f]
		if r == nil {
			continue
		}
		err := p.rules[f].Apply(ctx, r)
		if sr, ok := p.rules[f].(statsReporter); ok {
			st := sr.LastStats()
			res.SetElements += st.ElementsAdded + st.ElementsDeleted
			res.RuleWrites += st.RuleWrites
			res.Phases.Sets += st.SetsTime
			res.Phases.Rules -= st.SetsTime
		} else {
			res.RuleWrites++ // all we know: one Apply
		}
		if err != nil {
			return opErr(SubsystemRules, fmt.Errorf("%v: %w", f, err))
		}
	}
	return nil
}

// read returns the kernel's copy of what the proxier owns: the virtual
// servers and VIPs in its ledger (see ledger) or applied by this Proxier,
// with their destinations. Nothing else is read, so nothing else is ever
// changed: another program's virtual server on one of its VIPs at another
// port, a link-local or foreign address on its link. A virtual server at a
// key the State wants that is not the proxier's goes into p.foreign, and
// Sync refuses to apply over it (a *ConflictError) before sending anything.
func (p *Proxier) read(ctx context.Context, want *desired) (*desired, error) {
	l := p.ledger
	p.ledger = nil
	afterStart := l != nil // start read it: the first read since a (re)start
	if l == nil {
		var err error
		if l, err = p.readLedger(ctx, false); err != nil {
			return nil, err
		}
	}
	// The rules are known where the last apply of a family succeeded;
	// elsewhere (a restart, a failure) they are the ledger as read, so the
	// plan keeps its members until the removals are done.
	have := &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{}, rules: l.rules}
	for f, r := range p.applied.rules {
		if r != nil {
			have.rules[f] = r
		}
	}
	if err := p.readVIPs(ctx, l, have, afterStart); err != nil {
		return nil, err
	}
	expected := map[ipvs.ServiceKey]bool{}
	for k := range want.servers {
		if (p.applied.servers[k] != nil || l.servers[k]) && !p.excluded(k.Addr) {
			expected[k] = true
		}
	}
	svcs, err := p.services(ctx, expected)
	if err != nil {
		return nil, opErr(SubsystemIPVS, fmt.Errorf("reading: %w", err))
	}
	p.foreign = nil
	for _, si := range svcs {
		k := si.Service.Key()
		if p.excluded(k.Addr) {
			continue // never ours (Config.ExcludeCIDRs), even in the ledger or on the link
		}
		mine := p.applied.servers[k]
		if mine == nil && l.servers[k] && !p.refused[k] {
			mine = &virtualServer{} // an earlier run's
		}
		if mine == nil && p.adopting && (want.servers[k] != nil || l.vips[k.Addr] || have.vips[k.Addr]) {
			mine = &virtualServer{} // kube-proxy's (Config.AdoptKubeProxy)
		}
		if mine == nil {
			if want.servers[k] != nil {
				if p.foreign == nil {
					p.foreign = map[ipvs.ServiceKey]ipvs.Service{}
				}
				p.foreign[k] = si.Service
			}
			continue // not ours: never read, never changed
		}
		dis, err := p.ipvs.Destinations(ctx, k)
		if err != nil {
			return nil, opErr(SubsystemIPVS, fmt.Errorf("reading: %w", err))
		}
		owner := mine.owner
		if w := want.servers[k]; w != nil {
			owner = w.owner
		}
		vs := &virtualServer{svc: si.Service, dests: map[ipvs.DestinationKey]ipvs.Destination{}, owner: owner}
		for _, di := range dis {
			vs.dests[di.Key()] = di.Destination
		}
		have.servers[k] = vs
	}
	return have, nil
}

// dumpTries is how many times services lists the virtual servers at most.
const dumpTries = 3

// services lists the virtual servers, again (up to dumpTries in all) while
// one of expected is missing, keeping every one seen.
// The kernel resumes a service dump that spans several replies by its
// position in a table all namespaces share, so another namespace deleting
// services between two replies makes it skip some of ours: read back as
// missing, such a one would be added again and, refused as existing, taken
// for someone else's; left out of a Cleanup, it would stay.
func (p *Proxier) services(ctx context.Context, expected map[ipvs.ServiceKey]bool) ([]ipvs.ServiceInfo, error) {
	var out []ipvs.ServiceInfo
	seen := map[ipvs.ServiceKey]bool{}
	for range dumpTries {
		svcs, err := p.ipvs.Services(ctx)
		if err != nil {
			return nil, err
		}
		for _, si := range svcs {
			if k := si.Service.Key(); !seen[k] {
				seen[k] = true
				out = append(out, si)
			}
		}
		missing := false
		for k := range expected {
			if !seen[k] {
				missing = true
				break
			}
		}
		if !missing {
			break
		}
	}
	return out, nil
}

// union is every virtual server and VIP of x or y (y's copy where both).
func union(x, y *desired) *desired {
	u := &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{}}
	for _, d := range []*desired{x, y} {
		if d == nil {
			continue
		}
		for k, v := range d.servers {
			u.servers[k] = v
		}
		for a := range d.vips {
			u.vips[a] = true
		}
	}
	return u
}

// Cleanup removes everything the proxier owns and nothing else: the virtual
// servers in its ledger or applied by this Proxier, the VIP link (if it
// carries the link client's mark), and each back end's marked rules and
// sets. Another program's objects, even of the proxier's names, are left
// alone. The next Sync starts afresh.
func (p *Proxier) Cleanup(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, err := p.readLedger(ctx, true)
	if err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	owned := map[ipvs.ServiceKey]bool{}
	for k := range l.servers {
		// A refused one is someone else's, though the ledger has it.
		owned[k] = !p.refused[k]
	}
	if p.applied != nil {
		for k := range p.applied.servers {
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
	p.started, p.applied, p.readBack, p.foreign, p.draining, p.ledger, p.sv, p.oldVIPs = false, nil, false, nil, nil, nil, nil, nil
	p.held = held{known: true} // none left
	p.warns = nil              // the next Sync's are logged again
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
