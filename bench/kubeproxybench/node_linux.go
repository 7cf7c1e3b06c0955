package kubeproxybench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/ipvs"
)

// Node is a fresh network namespace set up as a node: lo up and a dummy link
// eth0 holding the node's IP (kube-proxy wants a node IP). This process's own
// namespace is never changed: the namespace is entered only by threads that
// die afterwards.
type Node struct{ h netns.NsHandle }

// NewNode makes one.
func NewNode() (*Node, error) {
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
		err = setUp()
	}()
	<-done
	if err != nil {
		if h.IsOpen() {
			h.Close()
		}
		return nil, fmt.Errorf("node namespace: %w", err)
	}
	return &Node{h: h}, nil
}

func setUp() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return err
	}
	eth := &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: NodeLink}}
	if err := netlink.LinkAdd(eth); err != nil {
		return fmt.Errorf("adding %s: %w", NodeLink, err)
	}
	l, err := netlink.LinkByName(NodeLink)
	if err != nil {
		return err
	}
	addr, err := netlink.ParseAddr(NodeIP.String())
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(l, addr); err != nil {
		return fmt.Errorf("adding %v to %s: %w", NodeIP, NodeLink, err)
	}
	return netlink.LinkSetUp(l)
}

// Handle is the namespace, for ipvskit's clients.
func (n *Node) Handle() netns.NsHandle { return n.h }

// Start starts cmd inside the namespace: it is forked from a thread that
// has entered it, and that thread is then thrown away.
func (n *Node) Start(cmd *exec.Cmd) error {
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked
		if err = netns.Set(n.h); err != nil {
			return
		}
		err = cmd.Start()
	}()
	<-done
	return err
}

// Close empties the namespace's IPVS table and deletes its links (with the
// VIPs on them) before letting it go, so that the kernel's work of tearing
// down a node of 10,000 services is done here, untimed, and not in the
// background of the next measurement.
func (n *Node) Close() error {
	var errs []error
	if c, err := ipvs.New(&ipvs.Config{NetNS: n.h}); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, c.Flush(context.Background()))
		c.Close()
	}
	if h, err := netlink.NewHandleAt(n.h, unix.NETLINK_ROUTE); err != nil {
		errs = append(errs, err)
	} else {
		links, err := h.LinkList()
		errs = append(errs, err)
		for _, l := range links {
			if l.Attrs().Name != "lo" {
				errs = append(errs, h.LinkDel(l))
			}
		}
		h.Close()
	}
	errs = append(errs, n.h.Close())
	return errors.Join(errs...)
}
