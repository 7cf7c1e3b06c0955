package ipvs

import (
	"fmt"
	"iter"
	"slices"
)

// OpKind is the kind of one batch request.
type OpKind uint8

// Batch request kinds.
const (
	OpAddService OpKind = iota + 1
	OpUpdateService
	OpDeleteService
	OpAddDestination
	OpUpdateDestination
	OpDeleteDestination
)

func (k OpKind) String() string {
	switch k {
	case OpAddService:
		return "add service"
	case OpUpdateService:
		return "update service"
	case OpDeleteService:
		return "delete service"
	case OpAddDestination:
		return "add destination"
	case OpUpdateDestination:
		return "update destination"
	case OpDeleteDestination:
		return "delete destination"
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// Op is one request of a Batch. For service requests Destination is zero;
// for deletions only the identity fields matter.
type Op struct {
	Kind        OpKind
	Service     Service
	Destination Destination
}

// object names the op's object for errors.
func (o Op) object() string {
	switch o.Kind {
	case OpAddDestination, OpUpdateDestination, OpDeleteDestination:
		return destObject(o.Service.Key(), o.Destination.Key())
	}
	return o.Service.Key().String()
}

func destObject(k ServiceKey, d DestinationKey) string {
	return k.String() + " destination " + d.String()
}

// Batch collects service and destination requests to send together: the
// Client packs them many to a sendmsg and asks the kernel for one ack per
// send, which is several times faster than one request per round trip.
// Each request is validated when it is added; the first invalid one is kept
// (see Err) and makes Apply send nothing. Requests run in order; a failed one
// does not stop the others unless StopOnError is set.
//
// The zero value is an empty batch ready to use. A Batch is not safe for
// concurrent use.
type Batch struct {
	// StopOnError stops the batch after the first send in which a request
	// failed. The kernel still runs every request of that send; requests
	// of later sends are not sent, and Apply reports them as failed with an
	// error wrapping ErrNotSent.
	StopOnError bool

	reqs []request    // see batch_store.go
	svcs serviceTable // the services of reqs, one per run of requests
	err  error
}

func (b *Batch) add(op Op, err error) {
	if err != nil {
		if b.err == nil {
			b.err = &Error{Op: op.Kind.String(), Object: op.object(), Err: fmt.Errorf("batch request %d: %w", len(b.reqs), err)}
		}
		return
	}
	b.store(op)
}

// Grow makes room for n more requests, so that collecting a large batch does
// not copy it as it grows.
func (b *Batch) Grow(n int) { b.reqs = slices.Grow(b.reqs, n) }

// Append adds o's requests to the end of b, in their order, as if each had
// been added to b in turn; o is unchanged. If b has no invalid request yet
// and o has one, o's becomes b's (see Err; its message counts requests from
// the start of o). Two batches collected apart, by two goroutines say, make
// one this way.
func (b *Batch) Append(o *Batch) {
	if b.err == nil {
		b.err = o.err
	}
	off := uint32(b.svcs.n)
	for i := range o.svcs.n {
		b.svcs.add(*o.svcs.at(uint32(i)))
	}
	b.reqs = slices.Grow(b.reqs, len(o.reqs))
	for _, r := range o.reqs {
		r.svc += off
		b.reqs = append(b.reqs, r)
	}
}

// AddService adds a request to create s.
func (b *Batch) AddService(s Service) {
	b.add(Op{Kind: OpAddService, Service: s}, validateService(s))
}

// UpdateService adds a request to change s's configuration.
func (b *Batch) UpdateService(s Service) {
	b.add(Op{Kind: OpUpdateService, Service: s}, validateService(s))
}

// DeleteService adds a request to delete the service k (and its destinations).
func (b *Batch) DeleteService(k ServiceKey) {
	s := Service{Family: k.Family, Protocol: k.Protocol, Addr: k.Addr, Port: k.Port, FWMark: k.FWMark}
	b.add(Op{Kind: OpDeleteService, Service: s}, validateKey(k))
}

// AddDestination adds a request to add d to the service k.
func (b *Batch) AddDestination(k ServiceKey, d Destination) {
	b.add(Op{Kind: OpAddDestination, Service: keyService(k), Destination: d}, validateDest(k, d))
}

// UpdateDestination adds a request to change d's configuration in service k.
func (b *Batch) UpdateDestination(k ServiceKey, d Destination) {
	b.add(Op{Kind: OpUpdateDestination, Service: keyService(k), Destination: d}, validateDest(k, d))
}

// DeleteDestination adds a request to remove the destination d from service k.
func (b *Batch) DeleteDestination(k ServiceKey, d DestinationKey) {
	dst := Destination{Addr: d.Addr, Port: d.Port}
	b.add(Op{Kind: OpDeleteDestination, Service: keyService(k), Destination: dst}, validateDestKey(k, d))
}

// Ops returns the requests collected so far, in order, in a new slice. The
// batch keeps its requests in a compact form, so Ops allocates the whole
// slice; All and At read them without allocating.
func (b *Batch) Ops() []Op {
	if len(b.reqs) == 0 {
		return nil
	}
	ops := make([]Op, len(b.reqs))
	for i := range b.reqs {
		ops[i] = b.op(&b.reqs[i])
	}
	return ops
}

// All yields the requests collected so far, in order, with their indexes
// (those of Ops, and of FailedOp.Index), without allocating.
func (b *Batch) All() iter.Seq2[int, Op] {
	return func(yield func(int, Op) bool) {
		for i := range b.reqs {
			if !yield(i, b.op(&b.reqs[i])) {
				return
			}
		}
	}
}

// At returns request i, 0 <= i < Len(): Ops()[i] without the slice.
func (b *Batch) At(i int) Op { return b.op(&b.reqs[i]) }

// Len is the number of requests collected.
func (b *Batch) Len() int { return len(b.reqs) }

// Err returns the first invalid request's error, or nil.
func (b *Batch) Err() error { return b.err }

func keyService(k ServiceKey) Service {
	return Service{Family: k.Family, Protocol: k.Protocol, Addr: k.Addr, Port: k.Port, FWMark: k.FWMark}
}
