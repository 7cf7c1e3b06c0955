package proxier

import (
	"errors"
	"net/netip"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/ipvs"
)

// What a sync sent and what the kernel confirmed, for SyncEvent: counted
// from the calls made and the errors they returned, never from the plan,
// so that a sync that fails part way reports what it did, not what it
// meant to do.

// sentCounts are the requests a sync sent to the IPVS client and the VIP
// link client, and the changes to how many virtual servers and VIPs the
// kernel holds that the clients confirmed.
type sentCounts struct {
	ipvs, addrs   int // requests sent (see ipvsOutcome, linkOutcome)
	servers, vips int // virtual servers and VIPs added minus removed, confirmed
	// unsure says a failure left the VIPs held unknown (see apply).
	unsure bool
}

// outcome is what became of the requests of one call, as far as the
// client's answer tells: how many were sent (a refused request and one
// whose outcome is unknown included; one never sent not), and which are
// not known to have taken effect.
type outcome struct {
	sent int
	// all says no request is known to have taken effect (the call failed
	// as a whole); else failed lists those that failed, by index (IPVS)
	// or by address (the VIP link).
	all        bool
	failed     map[int]bool
	failedAddr map[netip.Addr]bool
}

// ipvsOutcome is the outcome of the IPVS batch b given Apply's err. An
// error other than an *ipvs.BatchError (an invalid batch) means nothing
// was sent; in a BatchError a request wrapping ipvs.ErrNotSent was not
// sent, and every request listed (refused, or in flight when the batch
// was cut short) is not known to have taken effect.
func ipvsOutcome(b *ipvs.Batch, err error) outcome {
	if err == nil {
		return outcome{sent: b.Len()}
	}
	var be *ipvs.BatchError
	if !errors.As(err, &be) {
		return outcome{all: true}
	}
	o := outcome{sent: be.Total, failed: map[int]bool{}}
	for _, f := range be.Failed {
		o.failed[f.Index] = true
		if errors.Is(f.Err, ipvs.ErrNotSent) {
			o.sent--
		}
	}
	return o
}

// done says whether request i of an IPVS batch is known to have taken
// effect.
func (o outcome) done(i int) bool { return !o.all && !o.failed[i] }

// doneAddr says whether the request on address a of a link update is known
// to have taken effect.
func (o outcome) doneAddr(a netip.Addr) bool { return !o.all && !o.failedAddr[a] }

// serverChanges counts the virtual servers b added and deleted that the
// kernel confirmed.
func serverChanges(b *ipvs.Batch, o outcome) int {
	n := 0
	for i, op := range b.All() {
		switch {
		case !o.done(i):
		case op.Kind == ipvs.OpAddService:
			n++
		case op.Kind == ipvs.OpDeleteService:
			n--
		}
	}
	return n
}

// linkOutcome is the outcome of a VIP link update of n addresses given its
// err. The link client names each address it failed to bind or unbind (a
// *dummy.Error with Addr set); one that wraps ipvs.ErrNotSent (the netlink
// batches' "never sent") was not sent. An error that names no address is a
// failure of the whole call (the link missing, an invalid address, the call
// cut short): none of it counts as sent or done, since the client does not
// say how far it got.
func linkOutcome(n int, err error) outcome {
	if err == nil {
		return outcome{sent: n}
	}
	o := outcome{sent: n, failedAddr: map[netip.Addr]bool{}}
	for _, e := range leaves(err) {
		var de *dummy.Error
		if !errors.As(e, &de) || !de.Addr.IsValid() {
			return outcome{all: true}
		}
		o.failedAddr[de.Addr.Addr()] = true
		if errors.Is(e, ipvs.ErrNotSent) {
			o.sent--
		}
	}
	return o
}

// leaves returns the errors err joins (errors.Join), recursively; err
// itself if it joins none.
func leaves(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}

// vipChanges counts the VIPs of add bound and of remove unbound that the
// kernel confirmed: bound ones count +1, unbound ones -1.
func vipChanges(add, remove []netip.Addr, o outcome) int {
	n := 0
	for _, a := range add {
		if o.doneAddr(a) {
			n++
		}
	}
	for _, a := range remove {
		if o.doneAddr(a) {
			n--
		}
	}
	return n
}

// held is how many of the proxier's virtual servers and VIPs the kernel
// holds, as far as the proxier knows: what it last read back or applied
// whole, with the changes the kernel confirmed since. known is false
// before the first read back of a Proxier (it counts only what this
// Proxier applied: what an earlier run left is not known yet) and after a
// failure whose effect the proxier cannot tell (sentCounts.unsure).
type held struct {
	servers, vips int
	known         bool
}

// heldOf is what d holds, known for sure.
func heldOf(d *desired) held { return held{servers: len(d.servers), vips: len(d.vips), known: true} }

// plus is h with the confirmed changes of s.
func (h held) plus(s sentCounts) held {
	h.servers += s.servers
	h.vips += s.vips
	h.known = h.known && !s.unsure
	return h
}
