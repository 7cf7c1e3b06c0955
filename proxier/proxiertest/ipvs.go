package proxiertest

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

// ipvsDep counts and fails the calls of a proxier.IPVS. Each method is one
// call of the wrapped client through the Injector.
type ipvsDep struct {
	in   *Injector
	next proxier.IPVS
}

func ipvsErr(op, object string) func(error) error {
	return func(err error) error { return &ipvs.Error{Op: op, Object: object, Err: err} }
}

func (w *ipvsDep) Services(ctx context.Context) ([]ipvs.ServiceInfo, error) {
	return valued(w.in, proxier.SubsystemIPVS, "IPVS.Services", "list services",
		func() ([]ipvs.ServiceInfo, error) { return w.next.Services(ctx) }, ipvsErr("list services", ""))
}

func (w *ipvsDep) Destinations(ctx context.Context, k ipvs.ServiceKey) ([]ipvs.DestinationInfo, error) {
	return valued(w.in, proxier.SubsystemIPVS, "IPVS.Destinations", "list destinations of "+k.String(),
		func() ([]ipvs.DestinationInfo, error) { return w.next.Destinations(ctx, k) }, ipvsErr("list destinations", k.String()))
}

// Apply counts each request of b. The requests the fault lets through are
// sent as batches of their own, so the wrapped client (or the kernel)
// applies them as it would have.
func (w *ipvsDep) Apply(ctx context.Context, b *ipvs.Batch) error {
	ops := b.Ops()
	if b.Err() != nil || len(ops) == 0 {
		return w.next.Apply(ctx, b) // refused or empty: nothing reaches the kernel
	}
	descs := make([]string, len(ops))
	for i, op := range ops {
		descs[i] = describe(op)
	}
	i, ie := w.in.call(proxier.SubsystemIPVS, 0, "IPVS.Apply", descs...)
	if i < 0 {
		return w.next.Apply(ctx, b)
	}
	be := &ipvs.BatchError{Total: len(ops)}
	failed := func(j int, err error) {
		be.Failed = append(be.Failed, ipvs.FailedOp{Index: j, Op: ops[j], Err: &ipvs.Error{Op: ops[j].Kind.String(), Object: object(ops[j]), Err: err}})
	}
	var others []error // what the wrapped client said, other than failed requests
	send := func(from, to int) {
		if from < to {
			others = append(others, merge(be, from, w.next.Apply(ctx, batchOf(ops[from:to], b.StopOnError))))
		}
	}
	switch ie.Mode {
	case CutShort:
		send(0, i)
		failed(i, ie)
		for j := i + 1; j < len(ops); j++ {
			failed(j, fmt.Errorf("batch request %d: %w", j, ipvs.ErrNotSent))
		}
		be.Err = ie
	case Refuse:
		send(0, i)
		failed(i, ie)
		send(i+1, len(ops))
	case LoseReply:
		send(0, len(ops))
		failed(i, ie)
	}
	sortFailed(be)
	return errors.Join(append([]error{be}, others...)...)
}

// merge moves the failed requests of err, a sub-batch's error whose
// requests start at offset from, into be, and returns what else err said.
func merge(be *ipvs.BatchError, from int, err error) error {
	var sub *ipvs.BatchError
	if !errors.As(err, &sub) {
		return err
	}
	for _, f := range sub.Failed {
		f.Index += from
		be.Failed = append(be.Failed, f)
	}
	if be.Err == nil {
		be.Err = sub.Err
	}
	return nil
}

func sortFailed(be *ipvs.BatchError) {
	f := be.Failed
	for i := 1; i < len(f); i++ { // insertion sort: a handful of entries
		for j := i; j > 0 && f[j].Index < f[j-1].Index; j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
}

// batchOf is a batch of ops.
func batchOf(ops []ipvs.Op, stopOnError bool) *ipvs.Batch {
	b := &ipvs.Batch{StopOnError: stopOnError}
	for _, op := range ops {
		k := op.Service.Key()
		switch op.Kind {
		case ipvs.OpAddService:
			b.AddService(op.Service)
		case ipvs.OpUpdateService:
			b.UpdateService(op.Service)
		case ipvs.OpDeleteService:
			b.DeleteService(k)
		case ipvs.OpAddDestination:
			b.AddDestination(k, op.Destination)
		case ipvs.OpUpdateDestination:
			b.UpdateDestination(k, op.Destination)
		case ipvs.OpDeleteDestination:
			b.DeleteDestination(k, op.Destination.Key())
		}
	}
	return b
}

func object(op ipvs.Op) string {
	switch op.Kind {
	case ipvs.OpAddDestination, ipvs.OpUpdateDestination, ipvs.OpDeleteDestination:
		return op.Service.Key().String() + " destination " + op.Destination.Key().String()
	}
	return op.Service.Key().String()
}

func describe(op ipvs.Op) string { return op.Kind.String() + " " + object(op) }
