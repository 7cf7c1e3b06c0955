package main

import (
	"fmt"
	"net/netip"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// namespace is a throwaway network namespace the demo made; closing the
// last handle (and leaving it) frees it with everything inside.
type namespace struct {
	name string
	h    netns.NsHandle
}

// newNamespace makes a fresh namespace with lo up. The thread that makes it
// is discarded, so the demo's own namespace never changes.
func newNamespace(name string) (*namespace, error) {
	ns := &namespace{name: name}
	err := onNewThread(func() error {
		h, err := netns.New()
		if err != nil {
			return err
		}
		ns.h = h
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	})
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", name, err)
	}
	return ns, nil
}

// do runs f inside ns on a thread that is discarded afterwards.
func (ns *namespace) do(f func() error) error {
	return onNewThread(func() error {
		if err := netns.Set(ns.h); err != nil {
			return err
		}
		return f()
	})
}

func (ns *namespace) close() { ns.h.Close() }

// link joins a and b with a veth pair, addresses and a route from b's side
// to everything via a (so replies come back through the node).
func link(a *namespace, aName string, aAddr netip.Prefix, b *namespace, bName string, bAddr netip.Prefix) error {
	err := a.do(func() error {
		return netlink.LinkAdd(&netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: aName}, PeerName: bName, PeerNamespace: netlink.NsFd(int(b.h)),
		})
	})
	if err != nil {
		return fmt.Errorf("veth %s-%s: %w", a.name, b.name, err)
	}
	up := func(ns *namespace, name string, addr netip.Prefix) error {
		return ns.do(func() error {
			l, err := netlink.LinkByName(name)
			if err != nil {
				return err
			}
			if err := netlink.AddrAdd(l, nodad(addr)); err != nil {
				return err
			}
			return netlink.LinkSetUp(l)
		})
	}
	if err := up(a, aName, aAddr); err != nil {
		return err
	}
	if err := up(b, bName, bAddr); err != nil {
		return err
	}
	return b.do(func() error {
		return netlink.RouteAdd(&netlink.Route{Gw: aAddr.Addr().AsSlice()})
	})
}

// nodad is p as an address that skips duplicate address detection.
func nodad(p netip.Prefix) *netlink.Addr {
	a, _ := netlink.ParseAddr(p.String())
	a.Flags = unix.IFA_F_NODAD
	return a
}

func onNewThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		errc <- f()
	}()
	return <-errc
}
