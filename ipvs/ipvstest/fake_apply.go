package ipvstest

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"syscall"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipvs"
)

// norm is k with its family filled in, as the kernel keys services.
func norm(k ipvs.ServiceKey) ipvs.ServiceKey {
	return ipvs.Service{Family: k.Family, Protocol: k.Protocol, Addr: k.Addr, Port: k.Port, FWMark: k.FWMark}.Key()
}

func objectOf(op ipvs.Op) string {
	switch op.Kind {
	case ipvs.OpAddDestination, ipvs.OpUpdateDestination, ipvs.OpDeleteDestination:
		return destObject(op.Service.Key(), op.Destination.Key())
	}
	return op.Service.Key().String()
}

// apply makes one validated request, with f.mu held, as ip_vs_ctl.c's
// ip_vs_genl_set_cmd does.
func (f *Fake) apply(op ipvs.Op) error {
	r := request{op: op, name: op.Kind.String(), obj: objectOf(op), k: op.Service.Key()}
	s := f.index[r.k]
	if op.Kind != ipvs.OpAddService && s == nil {
		return noService(r.name, r.obj, r.k)
	}
	switch op.Kind {
	case ipvs.OpAddService, ipvs.OpUpdateService:
		return f.putService(r, s)
	case ipvs.OpDeleteService:
		f.deleteService(r.k, s)
		return nil
	}
	return f.applyDest(r, s)
}

// request is one operation of apply with the names its errors carry and
// its service's key.
type request struct {
	op        ipvs.Op
	name, obj string
	k         ipvs.ServiceKey
}

func (r request) err(errno syscall.Errno) error { return kernelErr(r.name, r.obj, errno) }

// putService adds or updates a service; s is the one of that key, if any.
func (f *Fake) putService(r request, s *service) error {
	if r.op.Kind == ipvs.OpAddService && s != nil {
		return r.err(syscall.EEXIST)
	}
	if !slices.Contains(Schedulers, r.op.Service.Scheduler) {
		return unavailable(r.name, r.obj, r.op.Service)
	}
	if pe := r.op.Service.PersistenceEngine; pe != "" && pe != "sip" {
		return unavailable(r.name, r.obj, r.op.Service)
	}
	svc := r.op.Service
	svc.Family = r.k.Family
	if r.op.Kind == ipvs.OpAddService {
		s = &service{info: ipvs.ServiceInfo{Service: svc}}
		f.services = append(f.services, s)
		f.index[r.k] = s
		return nil
	}
	s.info.Service = svc
	return nil
}

// deleteService deletes s, whose key is k, and its destinations.
func (f *Fake) deleteService(k ipvs.ServiceKey, s *service) {
	for _, d := range s.dests {
		if d.Family != k.Family {
			f.mixed--
		}
	}
	delete(f.index, k)
	f.services = slices.DeleteFunc(f.services, func(x *service) bool { return x == s })
}

// applyDest adds, updates or deletes a destination of s.
func (f *Fake) applyDest(r request, s *service) error {
	d := r.op.Destination
	if d.Family == 0 {
		d.Family = inet.FamilyOf(d.Addr)
	}
	i := slices.IndexFunc(s.dests, func(x ipvs.DestinationInfo) bool { return x.Key() == d.Key() })
	switch r.op.Kind {
	case ipvs.OpAddDestination:
		if i >= 0 {
			return r.err(syscall.EEXIST)
		}
		if d.Family != r.k.Family && len(f.daemons) > 0 || !unicast(d.Addr) {
			return r.err(syscall.EINVAL)
		}
		if d.Family != r.k.Family {
			f.mixed++
		}
		s.dests = slices.Insert(s.dests, 0, ipvs.DestinationInfo{Destination: d})
	case ipvs.OpUpdateDestination:
		if i < 0 {
			return r.err(syscall.ENOENT)
		}
		if d.Family != r.k.Family && len(f.daemons) > 0 {
			return r.err(syscall.EINVAL)
		}
		s.dests[i].Destination = d
	case ipvs.OpDeleteDestination:
		if i < 0 {
			return r.err(syscall.ENOENT)
		}
		if s.dests[i].Family != r.k.Family {
			f.mixed--
		}
		s.dests = slices.Delete(s.dests, i, i+1)
	default:
		return r.err(syscall.EINVAL)
	}
	return nil
}

// unicast is the kernel's check on a new destination's address
// (ip_vs_new_dest): IPv4 must not be zeronet, broadcast or multicast; IPv6
// must be unicast and not link-local.
func unicast(a netip.Addr) bool {
	if a.Is4() {
		b := a.As4()
		return b[0] != 0 && a != netip.AddrFrom4([4]byte{255, 255, 255, 255}) && !a.IsMulticast()
	}
	return !a.IsUnspecified() && !a.IsMulticast() && !a.IsLinkLocalUnicast()
}

// Apply runs b's requests in order, as the Client does: nil if all
// succeeded, b.Err() if one was invalid (nothing applied), else a
// *ipvs.BatchError listing the failed ones; the others are applied. With
// b.StopOnError, requests after the first failure's send (the Client packs
// up to 1,024 requests a send) fail with errors wrapping ipvs.ErrNotSent.
func (f *Fake) Apply(ctx context.Context, b *ipvs.Batch) error {
	if err := b.Err(); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return &ipvs.Error{Op: "apply batch", Err: err}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	const perSend = 1024
	be := &ipvs.BatchError{Total: b.Len()}
	stopAt := -1
	for i, op := range b.All() {
		if stopAt >= 0 && i >= stopAt {
			be.Failed = append(be.Failed, ipvs.FailedOp{Index: i, Op: op,
				Err: &ipvs.Error{Op: op.Kind.String(), Object: objectOf(op), Err: fmt.Errorf("batch request %d: %w", i, ipvs.ErrNotSent)}})
			continue
		}
		if err := f.apply(op); err != nil {
			be.Failed = append(be.Failed, ipvs.FailedOp{Index: i, Op: op, Err: err})
			if b.StopOnError && stopAt < 0 {
				stopAt = (i/perSend + 1) * perSend
			}
		}
	}
	if len(be.Failed) == 0 {
		return nil
	}
	return be
}

// Flush deletes every service.
func (f *Fake) Flush(ctx context.Context) error {
	if err := ctxErr(ctx, "flush", ""); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.services, f.index, f.mixed = nil, map[ipvs.ServiceKey]*service{}, 0
	return nil
}

// ZeroService zeroes the counters of service k and its destinations: ESRCH
// if missing.
func (f *Fake) ZeroService(ctx context.Context, k ipvs.ServiceKey) error {
	const op = "zero counters"
	var b ipvs.Batch
	if b.DeleteService(k); b.Err() != nil {
		return refused(op, k.String(), b.Err())
	}
	if err := ctxErr(ctx, op, k.String()); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.index[norm(k)]
	if s == nil {
		return noService(op, k.String(), k)
	}
	zero(s)
	return nil
}

// ZeroAll zeroes every counter.
func (f *Fake) ZeroAll(ctx context.Context) error {
	if err := ctxErr(ctx, "zero counters", ""); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.services {
		zero(s)
	}
	return nil
}

func zero(s *service) {
	s.info.Stats = ipvs.Stats{}
	for i := range s.dests {
		s.dests[i].Stats = ipvs.Stats{}
	}
}
