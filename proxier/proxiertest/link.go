package proxiertest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/internal/linkcheck"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

// linkDep counts and fails the calls of a proxier.Link.
type linkDep struct {
	in   *Injector
	next proxier.Link
}

func linkErr(op, name string, p netip.Prefix) func(error) error {
	return func(err error) error { return &dummy.Error{Op: op, Link: name, Addr: p, Err: err} }
}

func (w *linkDep) Ensure(ctx context.Context, name string) (bool, error) {
	return valued(w.in, proxier.SubsystemAddresses, "Link.Ensure", "ensure link "+name,
		func() (bool, error) { return w.next.Ensure(ctx, name) }, linkErr("ensure", name, netip.Prefix{}))
}

func (w *linkDep) Addrs(ctx context.Context, name string) ([]netip.Prefix, error) {
	return valued(w.in, proxier.SubsystemAddresses, "Link.Addrs", "list addresses of "+name,
		func() ([]netip.Prefix, error) { return w.next.Addrs(ctx, name) }, linkErr("addrs", name, netip.Prefix{}))
}

func (w *linkDep) Delete(ctx context.Context, name string) error {
	return w.in.single(proxier.SubsystemAddresses, 0, "Link.Delete", "delete link "+name,
		func() error { return w.next.Delete(ctx, name) }, linkErr("delete", name, netip.Prefix{}))
}

// Update counts each address: those of add, then those of remove. Under
// CutShort the addresses before the failing one are bound (and unbound),
// under Refuse every other one is.
func (w *linkDep) Update(ctx context.Context, name string, add, remove []netip.Addr) error {
	return w.update(ctx, "Link.Update", "bind", "unbind", w.next.Update, name, add, remove)
}

// update is Update and UpdateRoutes: call names the method, addOp and
// delOp the operations on one address, next sends to the wrapped client.
func (w *linkDep) update(ctx context.Context, call, addOp, delOp string,
	next func(ctx context.Context, name string, add, remove []netip.Addr) error, name string, add, remove []netip.Addr) error {
	if !validUpdate(name, add, remove) || len(add)+len(remove) == 0 {
		return next(ctx, name, add, remove) // refused or empty: nothing reaches the kernel
	}
	descs := make([]string, 0, len(add)+len(remove))
	for _, a := range add {
		descs = append(descs, fmt.Sprintf("%s %v on %s", addOp, a, name))
	}
	for _, a := range remove {
		descs = append(descs, fmt.Sprintf("%s %v on %s", delOp, a, name))
	}
	i, ie := w.in.call(proxier.SubsystemAddresses, 0, call, descs...)
	if i < 0 {
		return next(ctx, name, add, remove)
	}
	op, a := addOp, netip.Addr{}
	if i < len(add) {
		a = add[i]
	} else {
		op, a = delOp, remove[i-len(add)]
	}
	injected := linkErr(op, name, netip.PrefixFrom(a, a.BitLen()))(ie)
	switch ie.Mode {
	case CutShort:
		injected = errors.Join(injected, notSent(name, addOp, delOp, add, remove, i+1))
		if i < len(add) {
			add, remove = add[:i], nil
		} else {
			remove = remove[:i-len(add)]
		}
	case Refuse:
		if i < len(add) {
			add = slices.Delete(slices.Clone(add), i, i+1)
		} else {
			j := i - len(add)
			remove = slices.Delete(slices.Clone(remove), j, j+1)
		}
	}
	var err error
	if len(add)+len(remove) > 0 {
		err = next(ctx, name, add, remove)
	}
	return errors.Join(injected, err)
}

// notSent is the error of each address from index from on of an update of
// add then remove that a CutShort fault kept from being sent: a
// *dummy.Error naming the address and wrapping ipvs.ErrNotSent (the
// netlink batches' error for a request never sent), joined.
func notSent(name, addOp, delOp string, add, remove []netip.Addr, from int) error {
	var errs []error
	for j := from; j < len(add)+len(remove); j++ {
		op, a := addOp, netip.Addr{}
		if j < len(add) {
			a = add[j]
		} else {
			op, a = delOp, remove[j-len(add)]
		}
		errs = append(errs, linkErr(op, name, netip.PrefixFrom(a, a.BitLen()))(fmt.Errorf("%w: an earlier request failed", ipvs.ErrNotSent)))
	}
	return errors.Join(errs...)
}

// routeLink is a link client with local routes (proxier.VIPLocalRoutes).
type routeLink interface {
	proxier.Link
	Routes(ctx context.Context, name string) ([]netip.Addr, error)
	UpdateRoutes(ctx context.Context, name string, add, remove []netip.Addr) error
}

// routeLinkDep is linkDep for a client with local routes: Routes is one
// operation, UpdateRoutes one per address, as Update.
type routeLinkDep struct {
	linkDep
	routes routeLink
}

func (w *routeLinkDep) Routes(ctx context.Context, name string) ([]netip.Addr, error) {
	return valued(w.in, proxier.SubsystemAddresses, "Link.Routes", "list routes of "+name,
		func() ([]netip.Addr, error) { return w.routes.Routes(ctx, name) }, linkErr("routes", name, netip.Prefix{}))
}

func (w *routeLinkDep) UpdateRoutes(ctx context.Context, name string, add, remove []netip.Addr) error {
	return w.update(ctx, "Link.UpdateRoutes", "add route", "remove route", w.routes.UpdateRoutes, name, add, remove)
}

func validUpdate(name string, add, remove []netip.Addr) bool {
	if linkcheck.Name(name) != "" {
		return false
	}
	for _, a := range slices.Concat(add, remove) {
		if linkcheck.VIP(a) != "" {
			return false
		}
	}
	return true
}
