package proxier

import (
	"errors"
	"strings"
	"time"
)

// Observer receives what a Proxier does, for metrics: the caller passes one
// in Config.Observer (there is no global registry). Observe is called
// synchronously, once per event, on the goroutine of the call that caused it
// (Sync, Drain, Reconcile), never concurrently with itself for one Proxier;
// it must not block for long or call back into the Proxier. The events are
// *SyncEvent, *DrainEvent and *ReconcileEvent; an Observer should ignore
// event types it does not know, since more may be added.
type Observer interface {
	Observe(Event)
}

// ObserverFunc is an Observer that is a function.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// Event is something a Proxier did: *SyncEvent, *DrainEvent or
// *ReconcileEvent.
type Event interface{ event() }

// Subsystem is a part of the kernel state the proxier changes.
type Subsystem string

// Subsystems, as they appear in errors and in SyncEvent.Ops.
const (
	SubsystemIPVS      Subsystem = "ipvs"      // virtual servers and destinations
	SubsystemSets      Subsystem = "sets"      // ipset or nftables set elements
	SubsystemRules     Subsystem = "rules"     // netfilter chains and rules
	SubsystemAddresses Subsystem = "addresses" // VIPs on the VIP link, and the link
	SubsystemSysctl    Subsystem = "sysctl"
	SubsystemConntrack Subsystem = "conntrack"
)

// OpError is a failure of one subsystem during a Sync, Drain, Reconcile or
// Cleanup. errors.As finds it in what those return.
type OpError struct {
	Subsystem Subsystem
	Err       error
}

func (e *OpError) Error() string {
	// The ipvs, sysctl and conntrack packages' errors name their subsystem
	// already: say it once.
	msg, label := e.Err.Error(), string(e.Subsystem)+": "
	if strings.HasPrefix(msg, label) || strings.Contains(msg, ": "+label) {
		return "proxier: " + msg
	}
	return "proxier: " + label + msg
}

// Unwrap returns the subsystem's error.
func (e *OpError) Unwrap() error { return e.Err }

// opErr wraps err (nil stays nil) as subsystem s's failure.
func opErr(s Subsystem, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Subsystem: s, Err: err}
}

// failedSubsystem is the subsystem of the first OpError in err, or "".
func failedSubsystem(err error) Subsystem {
	var oe *OpError
	if errors.As(err, &oe) {
		return oe.Subsystem
	}
	return ""
}

// SyncEvent describes one Sync, successful or not.
type SyncEvent struct {
	Start    time.Time
	Duration time.Duration
	// Phases is where the time went.
	Phases Phases
	// Ops counts the kernel operations the sync sent, by subsystem, never
	// what it planned: IPVS requests; VIP requests (addresses or local
	// routes bound and unbound, those of the other VIPMode removed
	// included); set elements changed and rule writes (Result.SetElements
	// and RuleWrites); sysctls changed (those the client reports); conntrack
	// entries deleted. After a failure they count the requests sent up to
	// it, the one that failed included (refused, or its reply lost), and
	// not those never sent: the IPVS requests of a batch cut short that
	// wrap ipvs.ErrNotSent, a VIP link call that failed as a whole (the
	// client does not say how far it got), and everything after the
	// failing subsystem's call.
	Ops map[Subsystem]int
	// Err is the sync's error, nil on success; ErrSubsystem is the
	// subsystem that failed ("" for a validation error or a conflict).
	Err          error
	ErrSubsystem Subsystem
	// VirtualServers and VIPs are how many of the proxier's own the kernel
	// holds after the sync, as far as the proxier knows: on success, the
	// State's. After a failure, those it held before the sync (as last
	// read back or applied) with the additions and removals the kernel
	// confirmed: a request that failed counts as not done, so one whose
	// reply was lost (it failed, but took effect) is miscounted until the
	// next Sync, which reads the kernel back.
	VirtualServers, VIPs int
	// Unsure says VirtualServers and VIPs may be wrong, beyond a lost
	// reply: the Proxier has not read the kernel back yet (its first Sync
	// failed before the read back), so they count only what it applied
	// itself, not what an earlier run left; or, with VIPLocalRoutes, the
	// removal of the addresses an earlier run bound in the other VIPMode
	// failed part way, and the kernel drops a link's IPv4 local routes
	// with its last IPv4 address. The next Sync reads the kernel back.
	Unsure bool
	// Draining is how many destinations are draining after the sync.
	Draining int
	// Warnings are Result.Warnings: what the State asks for that has no
	// effect. Config.Logger gets each at Warn level once, at the first
	// sync that finds it, not again while it stays.
	Warnings []Warning
}

// DrainEvent describes one Drain.
type DrainEvent struct {
	Start    time.Time
	Duration time.Duration
	// Deleted destinations (drained or past the maximum drain time), and
	// Queue, how many are still draining.
	Deleted, Queue int
	Err            error
}

// ReconcileEvent describes one Reconcile.
type ReconcileEvent struct {
	Start    time.Time
	Duration time.Duration
	// Repairs counts the drifts found, by subsystem. All were repaired if
	// Err is nil; otherwise those of the failing subsystem and of the ones
	// Reconcile repairs after it (rules, link, virtual servers, VIPs) may
	// not have been, and the next Sync repairs them.
	Repairs map[Subsystem]int
	Err     error
}

func (*SyncEvent) event()      {}
func (*DrainEvent) event()     {}
func (*ReconcileEvent) event() {}

// observeSync tells the Observer and the Logger about a Sync that started
// at start.
func (p *Proxier) observeSync(start time.Time, res *Result, errp *error) {
	if p.cfg.Observer == nil && p.cfg.Logger == nil {
		return
	}
	err := *errp
	ev := &SyncEvent{Start: start, Duration: time.Since(start), Phases: res.Phases, Ops: map[Subsystem]int{},
		Err: err, ErrSubsystem: failedSubsystem(err)}
	ev.Ops[SubsystemIPVS], ev.Ops[SubsystemAddresses] = res.sent.ipvs, res.sent.addrs
	ev.Ops[SubsystemSets], ev.Ops[SubsystemRules] = res.SetElements, res.RuleWrites
	ev.Ops[SubsystemSysctl] = len(res.SysctlChanges)
	ev.Draining, ev.Warnings = res.Draining, res.Warnings
	ev.Ops[SubsystemConntrack] = res.ConntrackDeleted
	ev.VirtualServers, ev.VIPs, ev.Unsure = p.kernel.held.servers, p.kernel.held.vips, !p.kernel.held.known
	if p.cfg.Observer != nil {
		p.cfg.Observer.Observe(ev)
	}
	if l := p.cfg.Logger; l != nil {
		switch {
		case err != nil:
			l.Warn("proxier: sync failed", "error", err, "subsystem", string(ev.ErrSubsystem), "duration", ev.Duration)
		case res.Plan != nil && !res.Plan.Empty():
			l.Info("proxier: synced", "duration", ev.Duration, "ipvsOps", ev.Ops[SubsystemIPVS],
				"addressOps", ev.Ops[SubsystemAddresses], "setOps", ev.Ops[SubsystemSets], "ruleOps", ev.Ops[SubsystemRules],
				"virtualServers", ev.VirtualServers, "vips", ev.VIPs)
		default:
			l.Debug("proxier: synced, nothing to change", "duration", ev.Duration)
		}
	}
}
