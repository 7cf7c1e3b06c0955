// Package dummytest provides Fake, an in-memory stand-in for dummy.Client
// with the kernel's semantics and the same errors, for unit tests of code
// that manages a VIP-holding dummy link.
//
// Code under test should depend on a small interface that both *dummy.Client
// and *Fake satisfy, for example:
//
//	type vipLink interface {
//		Ensure(ctx context.Context, name string) (bool, error)
//		Sync(ctx context.Context, name string, wanted []netip.Addr) (dummy.SyncResult, error)
//	}
package dummytest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/ipvskit/ipvskit/dummy"
)

// Fake is an in-memory network namespace holding links, their addresses and
// the local routes out of them.
// Its methods behave like dummy.Client's against a kernel: same validation,
// same ownership rules (a link of another kind, or a dummy link without the
// owner's mark, is never changed), same errors (*dummy.Error,
// *dummy.LinkTypeError, *dummy.ForeignError, *dummy.ValidationError,
// matching fs.ErrExist and fs.ErrNotExist alike). The zero value is an empty
// namespace whose methods act as a Client with dummy.DefaultOwner; a Fake
// is safe for concurrent use.
type Fake struct {
	mu    sync.Mutex
	owner string // "" means dummy.DefaultOwner
	links map[string]*link
	order []string // link names in creation order, for Dump
}

type link struct {
	kind  string
	alias string
	addrs map[netip.Prefix]bool
	// routes are the local routes (table local, type local) whose output
	// device is the link, by address and protocol.
	routes map[routeKey]bool
}

// routeKey is a local route's destination and protocol.
type routeKey struct {
	addr  netip.Addr
	proto uint8
}

// New returns an empty Fake acting as a Client with dummy.DefaultOwner.
func New() *Fake { return &Fake{} }

// NewOwner returns an empty Fake acting as a Client with Config.Owner owner.
func NewOwner(owner string) *Fake { return &Fake{owner: owner} }

func (f *Fake) mark() string {
	if f.owner == "" {
		return dummy.DefaultOwner
	}
	return f.owner
}

// AddLink makes a link of any kind ("bridge", "veth", "dummy", ...) without
// an alias, the way another program would, for tests of what the code
// under test does with links it does not own. It fails if the name is
// taken or invalid.
func (f *Fake) AddLink(name, kind string) error { return f.AddLinkAlias(name, kind, "") }

// AddLinkAlias is AddLink with an alias: a dummy link with the owner's
// mark as alias is the Fake's own, as if an earlier run had made it.
func (f *Fake) AddLinkAlias(name, kind, alias string) error {
	if err := checkName(name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.links[name] != nil {
		return fmt.Errorf("dummytest: link %q exists: %w", name, errExist)
	}
	f.add(name, kind, alias)
	return nil
}

// AddAddr adds p, with any prefix length, to link name the way another
// program would. It fails if there is no such link or p is already there.
func (f *Fake) AddAddr(name string, p netip.Prefix) error {
	if !p.IsValid() {
		return fmt.Errorf("dummytest: invalid prefix %v", p)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.links[name]
	switch {
	case l == nil:
		return fmt.Errorf("dummytest: link %q: %w", name, errNoLink)
	case l.addrs[p]:
		return fmt.Errorf("dummytest: %v on %q: %w", p, name, errExist)
	}
	l.addrs[p] = true
	return nil
}

// AddRoute adds a local route for addr (table local, type local) with
// protocol proto on link name the way another program would, for tests of
// what the code under test leaves alone: on a link that is not the Fake's,
// or of a protocol other than dummy.RouteProtocol, it is never listed or
// removed. It fails if there is no such link or the route is there.
func (f *Fake) AddRoute(name string, addr netip.Addr, proto uint8) error {
	if !addr.IsValid() {
		return fmt.Errorf("dummytest: invalid address %v", addr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.links[name]
	k := routeKey{addr, proto}
	switch {
	case l == nil:
		return fmt.Errorf("dummytest: link %q: %w", name, errNoLink)
	case l.routes[k]:
		return fmt.Errorf("dummytest: route local %v proto %d on %q: %w", addr, proto, name, errExist)
	}
	l.routes[k] = true
	return nil
}

// LinkRoutes returns the local routes of any link (not only dummy ones),
// each as its address and protocol, sorted; ok is false if there is no
// such link.
func (f *Fake) LinkRoutes(name string) (rs []Route, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.links[name]
	if l == nil {
		return nil, false
	}
	return l.sortedRoutes(), true
}

// Route is a local route of a link in the Fake: its address and protocol
// number.
type Route struct {
	Addr     netip.Addr
	Protocol uint8
}

// Links returns the names of every link in the Fake, in creation order.
func (f *Fake) Links() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.order)
}

// LinkAddrs returns the addresses of any link (not only dummy ones), sorted;
// ok is false if there is no such link.
func (f *Fake) LinkAddrs(name string) (ps []netip.Prefix, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.links[name]
	if l == nil {
		return nil, false
	}
	return l.sorted(), true
}

// Dump renders the Fake as input for "ip -batch -": the commands that would
// make the same links and addresses in an empty namespace. Dummy links are
// shown down and with ARP off, as Ensure makes them.
func (f *Fake) Dump() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, name := range f.order {
		l := f.links[name]
		fmt.Fprintf(&b, "link add %s type %s\n", name, l.kind)
		if l.alias != "" {
			fmt.Fprintf(&b, "link set %s alias %s\n", name, l.alias)
		}
		if l.kind == "dummy" {
			fmt.Fprintf(&b, "link set %s arp off\n", name)
		}
		for _, p := range l.sorted() {
			fmt.Fprintf(&b, "address add %s dev %s\n", p, name)
		}
		for _, r := range l.sortedRoutes() {
			fmt.Fprintf(&b, "route add local %s dev %s table local proto %d scope host\n",
				netip.PrefixFrom(r.Addr, r.Addr.BitLen()), name, r.Protocol)
		}
	}
	return b.String()
}

// Close does nothing; it is there so that a Fake can stand in for a Client.
func (f *Fake) Close() error { return nil }

// Ensure is dummy.Client.Ensure.
func (f *Fake) Ensure(ctx context.Context, name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return false, opErr("ensure", name, netip.Prefix{}, err)
	}
	if f.links[name] != nil {
		if _, err := f.lookup(ctx, name); err != nil {
			return false, opErr("ensure", name, netip.Prefix{}, err)
		}
		return false, nil
	}
	f.add(name, "dummy", f.mark())
	return true, nil
}

// Adopt is dummy.Client.Adopt: an unmarked dummy link takes the Fake's mark.
func (f *Fake) Adopt(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.lookup(ctx, name)
	var fe *dummy.ForeignError
	if errors.As(err, &fe) && fe.Alias == "" {
		f.links[name].alias, err = f.mark(), nil
	}
	if err != nil {
		return opErr("adopt", name, netip.Prefix{}, err)
	}
	return nil
}

// Addrs is dummy.Client.Addrs.
func (f *Fake) Addrs(ctx context.Context, name string) ([]netip.Prefix, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.lookup(ctx, name)
	if err != nil {
		return nil, opErr("addrs", name, netip.Prefix{}, err)
	}
	return l.sorted(), nil
}

// AdoptableAddrs is dummy.Client.AdoptableAddrs.
func (f *Fake) AdoptableAddrs(ctx context.Context, name string) ([]netip.Prefix, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.lookup(ctx, name)
	var fe *dummy.ForeignError
	if errors.As(err, &fe) && fe.Alias == "" {
		l, err = f.links[name], nil
	}
	if err != nil {
		return nil, opErr("addrs", name, netip.Prefix{}, err)
	}
	return l.sorted(), nil
}

// Bind is dummy.Client.Bind.
func (f *Fake) Bind(ctx context.Context, name string, addr netip.Addr) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := checkAddr("addr", addr); err != nil {
		return err
	}
	p := netip.PrefixFrom(addr, addr.BitLen())
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.lookup(ctx, name)
	if err == nil && l.addrs[p] {
		err = errExist
	}
	if err != nil {
		return opErr("bind", name, p, err)
	}
	l.addrs[p] = true
	return nil
}

// Unbind is dummy.Client.Unbind.
func (f *Fake) Unbind(ctx context.Context, name string, addr netip.Addr) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := checkAddr("addr", addr); err != nil {
		return err
	}
	p := netip.PrefixFrom(addr, addr.BitLen())
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.lookup(ctx, name)
	if err == nil && !l.addrs[p] {
		err = errNoAddr
	}
	if err != nil {
		return opErr("unbind", name, p, err)
	}
	delete(l.addrs, p)
	l.lostAddress()
	return nil
}

// Update is dummy.Client.Update.
func (f *Fake) Update(ctx context.Context, name string, add, remove []netip.Addr) error {
	if err := checkUpdate(name, add, remove); err != nil {
		return err
	}
	if len(add)+len(remove) == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.lookup(ctx, name)
	if err != nil {
		return opErr("update", name, netip.Prefix{}, err)
	}
	for _, a := range add {
		l.addrs[netip.PrefixFrom(a, a.BitLen())] = true
	}
	for _, a := range remove {
		delete(l.addrs, netip.PrefixFrom(a, a.BitLen()))
	}
	l.lostAddress()
	return nil
}

// Routes is dummy.Client.Routes.
func (f *Fake) Routes(ctx context.Context, name string) ([]netip.Addr, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.lookup(ctx, name)
	if err != nil {
		return nil, opErr("routes", name, netip.Prefix{}, err)
	}
	var as []netip.Addr
	for _, r := range l.sortedRoutes() {
		if r.Protocol == dummy.RouteProtocol {
			as = append(as, r.Addr)
		}
	}
	return as, nil
}

// UpdateRoutes is dummy.Client.UpdateRoutes.
func (f *Fake) UpdateRoutes(ctx context.Context, name string, add, remove []netip.Addr) error {
	if err := checkUpdate(name, add, remove); err != nil {
		return err
	}
	if len(add)+len(remove) == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.lookup(ctx, name)
	if err != nil {
		return opErr("update routes", name, netip.Prefix{}, err)
	}
	for _, a := range add {
		l.routes[routeKey{a, dummy.RouteProtocol}] = true
	}
	for _, a := range remove {
		delete(l.routes, routeKey{a, dummy.RouteProtocol})
	}
	return nil
}

// Sync is dummy.Client.Sync.
func (f *Fake) Sync(ctx context.Context, name string, wanted []netip.Addr) (dummy.SyncResult, error) {
	var res dummy.SyncResult
	if err := checkName(name); err != nil {
		return res, err
	}
	want := make(map[netip.Prefix]bool, len(wanted))
	for i, a := range wanted {
		if err := checkAddr("wanted["+strconv.Itoa(i)+"]", a); err != nil {
			return res, err
		}
		want[netip.PrefixFrom(a, a.BitLen())] = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.lookup(ctx, name)
	if err != nil {
		return res, opErr("sync", name, netip.Prefix{}, err)
	}
	for p := range want {
		if !l.addrs[p] {
			res.Added = append(res.Added, p)
		}
	}
	for p := range l.addrs {
		if !want[p] && !(p.Addr().Is6() && p.Addr().IsLinkLocalUnicast()) {
			res.Removed = append(res.Removed, p)
		}
	}
	for _, p := range res.Added {
		l.addrs[p] = true
	}
	for _, p := range res.Removed {
		delete(l.addrs, p)
	}
	l.lostAddress()
	sortPrefixes(res.Added)
	sortPrefixes(res.Removed)
	return res, nil
}

// Delete is dummy.Client.Delete.
func (f *Fake) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.lookup(ctx, name); err != nil {
		return opErr("delete", name, netip.Prefix{}, err)
	}
	delete(f.links, name)
	f.order = slices.DeleteFunc(f.order, func(n string) bool { return n == name })
	return nil
}

func (f *Fake) add(name, kind, alias string) {
	if f.links == nil {
		f.links = map[string]*link{}
	}
	f.links[name] = &link{kind: kind, alias: alias, addrs: map[netip.Prefix]bool{}, routes: map[routeKey]bool{}}
	f.order = append(f.order, name)
}

// lookup is the Client's: ctx first, then existence, then kind, then mark.
func (f *Fake) lookup(ctx context.Context, name string) (*link, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l := f.links[name]
	switch {
	case l == nil:
		return nil, errNoLink
	case l.kind != "dummy":
		return nil, &dummy.LinkTypeError{Name: name, Type: l.kind}
	case l.alias != f.mark():
		return nil, &dummy.ForeignError{Name: name, Alias: l.alias, Owner: f.mark()}
	}
	return l, nil
}

func (l *link) sorted() []netip.Prefix {
	ps := make([]netip.Prefix, 0, len(l.addrs))
	for p := range l.addrs {
		ps = append(ps, p)
	}
	sortPrefixes(ps)
	return ps
}

// lostAddress is the kernel's answer to an address removal: a link left
// without any IPv4 address loses every IPv4 route out of it
// (net/ipv4/fib_frontend.c, fib_inetaddr_event: fib_disable_ip), local
// routes included.
func (l *link) lostAddress() {
	for p := range l.addrs {
		if p.Addr().Is4() {
			return
		}
	}
	for k := range l.routes {
		if k.addr.Is4() {
			delete(l.routes, k)
		}
	}
}

func (l *link) sortedRoutes() []Route {
	rs := make([]Route, 0, len(l.routes))
	for k := range l.routes {
		rs = append(rs, Route{Addr: k.addr, Protocol: k.proto})
	}
	slices.SortFunc(rs, func(a, b Route) int {
		if c := a.Addr.Compare(b.Addr); c != 0 {
			return c
		}
		return int(a.Protocol) - int(b.Protocol)
	})
	return rs
}

func sortPrefixes(ps []netip.Prefix) {
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
}

func opErr(op, name string, p netip.Prefix, err error) error {
	return &dummy.Error{Op: op, Link: name, Addr: p, Err: err}
}

// kernelErr is the errno the kernel would answer, matching the fs error the
// Client's would on every GOOS.
type kernelErr struct {
	errno syscall.Errno
	is    error
	text  string
}

func (e kernelErr) Error() string        { return e.text }
func (e kernelErr) Unwrap() error        { return e.errno }
func (e kernelErr) Is(target error) bool { return target == e.is }

var (
	errExist  = kernelErr{syscall.EEXIST, fs.ErrExist, "file exists"}
	errNoLink = kernelErr{syscall.ENODEV, fs.ErrNotExist, "no such link: no such device"}
	errNoAddr = kernelErr{syscall.EADDRNOTAVAIL, fs.ErrNotExist, "cannot assign requested address"}
)
