// Package ipvsbench compares ipvskit's ipvs client with github.com/moby/ipvs
// on the same kernel: (a) create services with masq destinations, (b) list
// every service with its destinations, (c) change one destination's weight,
// (d) delete everything. Every phase runs in a fresh network namespace (the
// kernel's destination trash list makes re-adds after deletes slow), with the
// table it needs put there first, untimed.
package ipvsbench

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
	moby "github.com/moby/ipvs"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Table is the shape of the benchmark's IPVS table.
type Table struct {
	Services int // TCP services 198.18.0.0/16 port 80
	Dests    int // masq destinations per service, in 198.19.0.0/16
}

func (t Table) service(i int) ipvs.Service {
	return ipvs.Service{Protocol: ipvs.TCP, Addr: netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), Port: 80, Scheduler: "rr"}
}

func (t Table) dest(i, j int) ipvs.Destination {
	k := i*t.Dests + j
	return ipvs.Destination{Addr: netip.AddrFrom4([4]byte{198, 19, byte(k >> 8), byte(k)}), Port: uint16(8080 + k>>16), Forward: ipvs.Masq, Weight: 1}
}

func mobyService(s ipvs.Service) *moby.Service {
	return &moby.Service{Address: net.IP(s.Addr.AsSlice()), Protocol: unix.IPPROTO_TCP, Port: s.Port,
		SchedName: s.Scheduler, AddressFamily: unix.AF_INET, Netmask: 0xffffffff}
}

func mobyDest(d ipvs.Destination) *moby.Destination {
	return &moby.Destination{Address: net.IP(d.Addr.AsSlice()), Port: d.Port, Weight: int(d.Weight),
		ConnectionFlags: moby.ConnectionFlagMasq, AddressFamily: unix.AF_INET}
}

// Lib is one library under test, opened in one namespace.
type Lib interface {
	Create(t Table) error
	List(t Table) (services, dests int, err error)
	SetWeight(t Table, weight uint32) error
	DeleteAll(t Table) error
	Close()
}

// Ipvskit is github.com/ipvskit/ipvskit/ipvs.
type Ipvskit struct{ c *ipvs.Client }

func OpenIpvskit(ns *NetNS) (Lib, error) {
	c, err := ipvs.New(&ipvs.Config{NetNS: ns.h})
	return &Ipvskit{c}, err
}

func (l *Ipvskit) Close() { l.c.Close() }

func (l *Ipvskit) Create(t Table) error {
	var b ipvs.Batch
	for i := 0; i < t.Services; i++ {
		s := t.service(i)
		b.AddService(s)
		for j := 0; j < t.Dests; j++ {
			b.AddDestination(s.Key(), t.dest(i, j))
		}
	}
	return l.c.Apply(context.Background(), &b)
}

func (l *Ipvskit) List(t Table) (int, int, error) {
	snap, err := l.c.Snapshot(context.Background())
	n := 0
	for _, s := range snap.Services {
		n += len(s.Destinations)
	}
	return len(snap.Services), n, err
}

func (l *Ipvskit) SetWeight(t Table, w uint32) error {
	d := t.dest(0, 0)
	d.Weight = w
	return l.c.UpdateDestination(context.Background(), t.service(0).Key(), d)
}

func (l *Ipvskit) DeleteAll(t Table) error {
	var b ipvs.Batch
	for i := 0; i < t.Services; i++ {
		b.DeleteService(t.service(i).Key())
	}
	return l.c.Apply(context.Background(), &b)
}

// Moby is github.com/moby/ipvs.
type Moby struct{ h *moby.Handle }

func OpenMoby(ns *NetNS) (Lib, error) {
	h, err := moby.New(ns.Path())
	return &Moby{h}, err
}

func (l *Moby) Close() { l.h.Close() }

func (l *Moby) Create(t Table) error {
	for i := 0; i < t.Services; i++ {
		s := mobyService(t.service(i))
		if err := l.h.NewService(s); err != nil {
			return err
		}
		for j := 0; j < t.Dests; j++ {
			if err := l.h.NewDestination(s, mobyDest(t.dest(i, j))); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *Moby) List(t Table) (int, int, error) {
	svcs, err := l.h.GetServices()
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for _, s := range svcs {
		ds, err := l.h.GetDestinations(s)
		if err != nil {
			return 0, 0, err
		}
		n += len(ds)
	}
	return len(svcs), n, nil
}

func (l *Moby) SetWeight(t Table, w uint32) error {
	d := mobyDest(t.dest(0, 0))
	d.Weight = int(w)
	return l.h.UpdateDestination(mobyService(t.service(0)), d)
}

func (l *Moby) DeleteAll(t Table) error {
	for i := 0; i < t.Services; i++ {
		if err := l.h.DelService(mobyService(t.service(i))); err != nil {
			return err
		}
	}
	return nil
}

// NetNS is a fresh network namespace with lo up.
type NetNS struct{ h netns.NsHandle }

// NewNetNS makes one on a throwaway thread; this process's own namespace is
// not changed.
func NewNetNS() (*NetNS, error) {
	var (
		h   netns.NsHandle
		err error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if h, err = netns.New(); err != nil {
			return
		}
		var lo netlink.Link
		if lo, err = netlink.LinkByName("lo"); err == nil {
			err = netlink.LinkSetUp(lo)
		}
	}()
	<-done
	if err != nil {
		if h.IsOpen() {
			h.Close()
		}
		return nil, fmt.Errorf("new netns: %w", err)
	}
	return &NetNS{h: h}, nil
}

// Handle is the namespace's handle, for ipvskit clients' Config.NetNS.
func (n *NetNS) Handle() netns.NsHandle { return n.h }

// Path names the namespace for moby/ipvs, which takes a path.
func (n *NetNS) Path() string { return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), int(n.h)) }

func (n *NetNS) Close() { n.h.Close() }

// Result is one library's measurement of one phase.
type Result struct {
	Time time.Duration
	// User and Sys are the process's user and system CPU time during the
	// timed call (getrusage): in the VM, Sys is the guest kernel's share.
	User, Sys time.Duration
	Sent      *Sent // nil when not traced
}

// Hooks run around the timed call of a phase (not around setup or tracing):
// a CPU profile, for example. Either may be nil.
type Hooks struct {
	Before func() error
	After  func()
}

func cpuTimes() (user, sys time.Duration) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// Phase runs one phase for open in a fresh namespace: setup (untimed, with
// ipvskit) creates the table the phase needs, then run is timed. With trace,
// a second call of run (for phase c) or the timed call itself is counted
// with strace, untimed.
func Phase(name string, t Table, open func(*NetNS) (Lib, error), trace bool, hooks Hooks) (Result, error) {
	ns, err := NewNetNS()
	if err != nil {
		return Result{}, err
	}
	defer ns.Close()
	if name != "a" {
		setup, err := OpenIpvskit(ns)
		if err != nil {
			return Result{}, err
		}
		err = setup.Create(t)
		setup.Close()
		if err != nil {
			return Result{}, fmt.Errorf("setup: %w", err)
		}
	}
	lib, err := open(ns)
	if err != nil {
		return Result{}, err
	}
	defer lib.Close()
	run := func() error {
		switch name {
		case "a":
			return lib.Create(t)
		case "b":
			s, d, err := lib.List(t)
			if err == nil && (s != t.Services || d != t.Services*t.Dests) {
				err = fmt.Errorf("listed %d services, %d destinations; want %d, %d", s, d, t.Services, t.Services*t.Dests)
			}
			return err
		case "c":
			return lib.SetWeight(t, 7)
		case "d":
			return lib.DeleteAll(t)
		}
		return fmt.Errorf("no phase %q", name)
	}
	var r Result
	if trace && name != "c" {
		s, err := TraceSends(run)
		r.Sent = &s
		return r, err
	}
	if hooks.Before != nil {
		if err := hooks.Before(); err != nil {
			return r, err
		}
	}
	u0, s0 := cpuTimes()
	start := time.Now()
	err = run()
	r.Time = time.Since(start)
	u1, s1 := cpuTimes()
	if hooks.After != nil {
		hooks.After()
	}
	if err != nil {
		return r, err
	}
	r.User, r.Sys = u1-u0, s1-s0
	if trace {
		s, err := TraceSends(func() error { return lib.SetWeight(t, 9) })
		r.Sent = &s
		return r, err
	}
	return r, nil
}
