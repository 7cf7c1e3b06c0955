package proxier

import (
	"net/netip"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/sysctl"
)

// kernelState is how much a Proxier knows of what the kernel holds of its
// own objects. The transitions, each a method of knowledge:
//
//	unknown  --started-->   readBack   (the link and sysctls ensured, the ledger read)
//	readBack --readDone-->  known      (what it owns read back)
//	known    --succeeded--> known      (a plan applied)
//	known    --failedApply, failedRepair, lose--> failed (a sync, Reconcile or Drain that failed; a conflict)
//	failed   --started-->   readBack   (every failure starts again: the link may be gone too)
//	any      --forget-->    unknown    (Cleanup)
//
// A failed start leaves the state as it was; so does a failed read back,
// which the next sync starts again. Adopting (Config.AdoptKubeProxy) lies
// across them: from New until the first succeeded, whatever the failures
// between, the start adopts kube-proxy's link and the read back takes its
// virtual servers as the Proxier's. At rest, known implies not adopting.
type kernelState uint8

const (
	// unknown: nothing started, nothing known (a new Proxier, or one
	// after Cleanup). Reconcile has nothing to compare with.
	unknown kernelState = iota
	// readBack: started; what the Proxier owns is still to be read back
	// (an earlier run's, or one a failure left).
	readBack
	// known: applied is what the kernel holds of the Proxier's objects,
	// read back or applied since. At rest (between calls) it is the model
	// of the served State, so a sync may plan only what changed.
	known
	// failed: a failure left the kernel unknown: the next sync starts
	// again and reads it back.
	failed
)

// knowledge is what a Proxier knows of the kernel: its state (see
// kernelState), what it applied, and what it learnt reading the kernel back.
type knowledge struct {
	state kernelState
	// adopting, from New until a sync of a whole State succeeds, takes
	// kube-proxy's link and virtual servers as the Proxier's
	// (Config.AdoptKubeProxy), whatever the state.
	adopting bool
	// profile is the sysctl profile the last start applied.
	profile sysctl.Profile
	// applied is what the kernel has, as far as the proxier knows: nil
	// while unknown; after a failure, everything it may own, to read back.
	applied *desired
	// foreign are virtual servers, at keys the State asked for, that the
	// proxier did not create, as of the last read.
	foreign map[ipvs.ServiceKey]ipvs.Service
	// refused are keys whose virtual server someone else created between
	// a read and an add: in the ledger (written before the add) but never
	// ours.
	refused map[ipvs.ServiceKey]bool
	// oldVIPs are VIPs the proxier owns that the last read found held in
	// the other VIPMode (an earlier run's): apply removes them once it has
	// added its own form.
	oldVIPs []netip.Addr
	// held is how many of its virtual servers and VIPs the kernel holds,
	// as far as the Proxier knows (SyncEvent.VirtualServers and VIPs).
	held held
}

// newKnowledge is what a new Proxier knows: nothing.
func newKnowledge(adopting bool) knowledge {
	return knowledge{adopting: adopting, refused: map[ipvs.ServiceKey]bool{}}
}

// isKnown says the kernel holds what the Proxier applied, so a sync may
// plan only what changed.
func (k *knowledge) isKnown() bool { return k.state == known }

// needsStart says a sync must ensure the link and sysctls (again) first.
func (k *knowledge) needsStart() bool { return k.state != known }

// started records a start that applied profile: what the Proxier owns is
// to be read back.
func (k *knowledge) started(profile sysctl.Profile) {
	k.state, k.profile = readBack, profile
	if k.applied == nil {
		k.applied = emptyDesired()
	}
}

// readDone records what a read back found.
func (k *knowledge) readDone(have *desired) {
	k.state, k.applied, k.held = known, have, heldOf(have)
}

// succeeded records a plan applied: the kernel holds whole (the model of
// the State served).
func (k *knowledge) succeeded(whole *desired) {
	k.state, k.applied, k.adopting, k.held = known, whole, false, heldOf(whole)
}

// failedApply records an apply that failed with err after sending sent:
// the kernel is unknown, and mayOwn is everything the Proxier may now own,
// to read back (rules unknown). A virtual server that could not be added
// because it exists is someone else's: refused, the read back decides.
func (k *knowledge) failedApply(mayOwn *desired, err error, sent sentCounts) {
	k.lose()
	k.held = k.held.plus(sent)
	k.applied = mayOwn
	for _, key := range existing(err) {
		delete(k.applied.servers, key)
		k.refused[key] = true
	}
}

// lose records that the kernel is no longer known (a conflict: the foreign
// virtual server may go away; a Drain or a repair that failed part way).
// Nothing started is still nothing started.
func (k *knowledge) lose() {
	if k.state != unknown {
		k.state = failed
	}
}

// failedRepair records a Reconcile whose repair failed: as after a failed
// sync, the next one reads back what the Proxier owns and applies every
// family's rules (unknown now).
func (k *knowledge) failedRepair() {
	k.lose()
	k.applied = union(k.applied, nil)
}

// forget records a Cleanup: nothing of the Proxier's is left, and the next
// sync starts afresh.
func (k *knowledge) forget() {
	k.state, k.applied, k.foreign, k.oldVIPs = unknown, nil, nil, nil
	k.held = held{known: true} // none left
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

// emptyDesired is a kernel state with nothing in it.
func emptyDesired() *desired {
	return &desired{servers: map[ipvs.ServiceKey]*virtualServer{}, vips: map[netip.Addr]bool{}}
}
