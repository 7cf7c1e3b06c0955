// Package ipvstest provides Fake, an in-memory ipvs.Interface with the
// kernel's semantics, for unit tests of code that programs IPVS.
//
// A Fake refuses what the Client refuses, with the same *ipvs.Error and
// *ipvs.ValidationError, and fails where the kernel fails with the errno the
// kernel returns (net/netfilter/ipvs/ip_vs_ctl.c): EEXIST for a duplicate
// service, destination or sync daemon; ESRCH for a missing service, as an
// *ipvs.NoServiceError; ENOENT for a missing destination; an unknown
// scheduler or persistence engine as an *ipvs.UnavailableError; EINVAL for a destination address that is not unicast. Like the kernel it
// lists a missing service's destinations as none, lists destinations newest
// first, and starts with the kernel's timeouts (900, 120, 300 s). Dump shows
// the table as ipvsadm -Sn text.
//
//	f := ipvstest.New()
//	var p ipvs.Interface = f // what the code under test gets
//	... run the code under test ...
//	if got := f.Dump(); got != want { ... }
//
// A Fake is safe for concurrent use. Counters stay zero unless set with
// SetStats, and a destination's connection counts unless set with SetConns.
package ipvstest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"syscall"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
)

// Fake is an in-memory IPVS table. The zero value is not ready: use New.
type Fake struct {
	mu       sync.Mutex
	services []*service // in creation order
	index    map[ipvs.ServiceKey]*service
	timeouts ipvs.Timeouts
	daemons  []ipvs.Daemon
	mixed    int // destinations whose family differs from their service's
}

type service struct {
	info  ipvs.ServiceInfo
	dests []ipvs.DestinationInfo // newest first, as the kernel lists them
}

var _ ipvs.Interface = (*Fake)(nil)

// New returns an empty Fake with the kernel's default timeouts.
func New() *Fake {
	return &Fake{
		index:    map[ipvs.ServiceKey]*service{},
		timeouts: ipvs.Timeouts{TCP: 900e9, TCPFin: 120e9, UDP: 300e9},
	}
}

// Schedulers are the scheduler names the Fake accepts, as the stock kernel
// ships them ("none" binds no scheduler). Others fail with ENOENT.
var Schedulers = []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh", "twos", "none"}

// kernelErr is the error the Client returns when the kernel refuses op on
// object with errno.
func kernelErr(op, object string, errno syscall.Errno) error {
	return &ipvs.Error{Op: op, Object: object, Err: &nlconn.Error{Errno: errno}}
}

// refused is the error the Client returns when its own validation refuses
// an argument: the *ipvs.ValidationError taken from a Batch, which runs the
// same checks.
func refused(op, object string, batchErr error) error {
	var ve *ipvs.ValidationError
	if errors.As(batchErr, &ve) {
		return &ipvs.Error{Op: op, Object: object, Err: ve}
	}
	return &ipvs.Error{Op: op, Object: object, Err: batchErr}
}

func ctxErr(ctx context.Context, op, object string) error {
	if err := ctx.Err(); err != nil {
		return &ipvs.Error{Op: op, Object: object, Err: err}
	}
	return nil
}

func destObject(k ipvs.ServiceKey, d ipvs.DestinationKey) string {
	return k.String() + " destination " + d.String()
}

// AddService creates s: EEXIST if it exists, ENOENT for an unknown
// scheduler or persistence engine.
func (f *Fake) AddService(ctx context.Context, s ipvs.Service) error {
	return f.serviceOp(ctx, ipvs.OpAddService, s)
}

// UpdateService changes s's configuration: ESRCH if it does not exist.
func (f *Fake) UpdateService(ctx context.Context, s ipvs.Service) error {
	return f.serviceOp(ctx, ipvs.OpUpdateService, s)
}

// DeleteService deletes service k and its destinations: ESRCH if missing.
func (f *Fake) DeleteService(ctx context.Context, k ipvs.ServiceKey) error {
	return f.serviceOp(ctx, ipvs.OpDeleteService, ipvs.Service{Family: k.Family, Protocol: k.Protocol, Addr: k.Addr, Port: k.Port, FWMark: k.FWMark})
}

func (f *Fake) serviceOp(ctx context.Context, kind ipvs.OpKind, s ipvs.Service) error {
	obj := s.Key().String()
	var b ipvs.Batch
	switch kind {
	case ipvs.OpAddService:
		b.AddService(s)
	case ipvs.OpUpdateService:
		b.UpdateService(s)
	default:
		b.DeleteService(s.Key())
	}
	if err := b.Err(); err != nil {
		return refused(kind.String(), obj, err)
	}
	if err := ctxErr(ctx, kind.String(), obj); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.apply(ipvs.Op{Kind: kind, Service: s})
}

// GetService returns service k: ESRCH if missing.
func (f *Fake) GetService(ctx context.Context, k ipvs.ServiceKey) (ipvs.ServiceInfo, error) {
	const op = "get service"
	var b ipvs.Batch
	if b.DeleteService(k); b.Err() != nil {
		return ipvs.ServiceInfo{}, refused(op, k.String(), b.Err())
	}
	if err := ctxErr(ctx, op, k.String()); err != nil {
		return ipvs.ServiceInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.index[norm(k)]
	if s == nil {
		return ipvs.ServiceInfo{}, noService(op, k.String(), k)
	}
	return s.info, nil
}

// Services returns every service, in creation order.
func (f *Fake) Services(ctx context.Context) ([]ipvs.ServiceInfo, error) {
	if err := ctxErr(ctx, "list services", ""); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ipvs.ServiceInfo, 0, len(f.services))
	for _, s := range f.services {
		out = append(out, s.info)
	}
	return out, nil
}

// AddDestination adds d to service k: ESRCH if the service is missing,
// EEXIST if d is there, EINVAL if d's address is not unicast.
func (f *Fake) AddDestination(ctx context.Context, k ipvs.ServiceKey, d ipvs.Destination) error {
	return f.destOp(ctx, ipvs.OpAddDestination, k, d)
}

// UpdateDestination changes d in service k: ESRCH if the service is
// missing, ENOENT if d is.
func (f *Fake) UpdateDestination(ctx context.Context, k ipvs.ServiceKey, d ipvs.Destination) error {
	return f.destOp(ctx, ipvs.OpUpdateDestination, k, d)
}

// DeleteDestination removes d from service k: ESRCH if the service is
// missing, ENOENT if d is.
func (f *Fake) DeleteDestination(ctx context.Context, k ipvs.ServiceKey, d ipvs.DestinationKey) error {
	return f.destOp(ctx, ipvs.OpDeleteDestination, k, ipvs.Destination{Addr: d.Addr, Port: d.Port})
}

func (f *Fake) destOp(ctx context.Context, kind ipvs.OpKind, k ipvs.ServiceKey, d ipvs.Destination) error {
	obj := destObject(k, d.Key())
	var b ipvs.Batch
	switch kind {
	case ipvs.OpAddDestination:
		b.AddDestination(k, d)
	case ipvs.OpUpdateDestination:
		b.UpdateDestination(k, d)
	default:
		b.DeleteDestination(k, d.Key())
	}
	if err := b.Err(); err != nil {
		return refused(kind.String(), obj, err)
	}
	if err := ctxErr(ctx, kind.String(), obj); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.apply(b.At(0))
}

// Destinations returns service k's destinations, newest first; none (and no
// error) for a missing service, as the kernel's dump does.
func (f *Fake) Destinations(ctx context.Context, k ipvs.ServiceKey) ([]ipvs.DestinationInfo, error) {
	const op = "list destinations"
	var b ipvs.Batch
	if b.DeleteService(k); b.Err() != nil {
		return nil, refused(op, k.String(), b.Err())
	}
	if err := ctxErr(ctx, op, k.String()); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.index[norm(k)]
	if s == nil {
		return []ipvs.DestinationInfo{}, nil
	}
	return slices.Clone(s.dests), nil
}

// Snapshot returns every service with its destinations.
func (f *Fake) Snapshot(ctx context.Context) (ipvs.Snapshot, error) {
	if err := ctxErr(ctx, "list services", ""); err != nil {
		return ipvs.Snapshot{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snapshot(), nil
}

func (f *Fake) snapshot() ipvs.Snapshot {
	snap := ipvs.Snapshot{Services: make([]ipvs.ServiceSnapshot, 0, len(f.services))}
	for _, s := range f.services {
		snap.Services = append(snap.Services, ipvs.ServiceSnapshot{ServiceInfo: s.info, Destinations: slices.Clone(s.dests)})
	}
	return snap
}

// Dump returns the table as ipvsadm -Sn prints it, plus -x/-y for
// destinations with thresholds (ipvsadm.MarshalSnapshot).
func (f *Fake) Dump() string {
	f.mu.Lock()
	snap := f.snapshot()
	f.mu.Unlock()
	b, err := ipvsadm.MarshalSnapshot(snap)
	if err != nil {
		return "# " + err.Error() + "\n"
	}
	return string(b)
}

// Restore makes the requests of ipvsadm -R text (see ipvsadm.UnmarshalBatch)
// as Apply does.
func (f *Fake) Restore(ctx context.Context, text []byte) error {
	var b ipvs.Batch
	if err := ipvsadm.UnmarshalBatch(text, &b); err != nil {
		return err
	}
	return f.Apply(ctx, &b)
}

// SetStats sets the counters of service k, or of its destination d when d
// is not nil, for tests of code that reads them. It reports whether the
// object exists.
func (f *Fake) SetStats(k ipvs.ServiceKey, d *ipvs.DestinationKey, st ipvs.Stats) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.index[norm(k)]
	if s == nil {
		return false
	}
	if d == nil {
		s.info.Stats = st
		return true
	}
	for i := range s.dests {
		if s.dests[i].Key() == *d {
			s.dests[i].Stats = st
			return true
		}
	}
	return false
}

// SetConns sets the connection counts of destination d of service k (what
// ipvsadm -Ln shows as ActiveConn, InActConn and, with --persistent-conn,
// PersistConn), for tests of code that waits for a destination to go idle.
// The counts survive UpdateDestination, as in the kernel. It reports whether
// the destination exists.
func (f *Fake) SetConns(k ipvs.ServiceKey, d ipvs.DestinationKey, active, inactive, persistent uint32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.index[norm(k)]
	if s == nil {
		return false
	}
	for i := range s.dests {
		if s.dests[i].Key() == d {
			s.dests[i].ActiveConns, s.dests[i].InactiveConns, s.dests[i].PersistentConns = active, inactive, persistent
			return true
		}
	}
	return false
}
