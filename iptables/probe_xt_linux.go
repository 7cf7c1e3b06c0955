package iptables

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/internal/kerr"
	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// probeExtensions asks the kernel for revision 0 of every match and target
// the rules use, as the flavor's binary does before it sends a rule: the
// answer is the newest revision (present), EPROTONOSUPPORT (present, without
// that revision) or ENOENT (absent). The kernel loads an absent extension's
// module on demand, where it can, before it answers.
func (b *iptBackend) probeExtensions(ctx context.Context) []error {
	var ns netns.NsHandle
	if r, ok := b.run.(*nsRunner); ok {
		ns = r.ns
	}
	ask, closeAsk, err := b.revisionAsker(ns)
	if err != nil {
		return []error{err}
	}
	defer closeAsk()
	var (
		errs    []error
		noAsker bool // the kernel lacks the subsystem answering: said once
	)
	check := func(name string, target bool) {
		kind := "match"
		if target {
			kind = "target"
		}
		if noAsker {
			return
		}
		f := kerr.Feature{Name: fmt.Sprintf("iptables %s %s (%s, %s)", kind, name, b.fam, b.flavor), Module: extModule(name, b.fam)}
		err := b.answers.Run(ctx, f, func(ctx context.Context) error {
			err := ask(ctx, name, target)
			switch {
			case errors.Is(err, unix.EPROTONOSUPPORT):
				return nil // present, without revision 0
			case errors.Is(err, unix.ENOENT):
				return f.Missing(err)
			}
			return err
		})
		var missing *inet.UnsupportedFeatureError
		switch {
		case err == nil:
		case errors.As(err, &missing) && missing.Feature != f.Name:
			// The subsystem that answers is missing, not the extension.
			errs, noAsker = append(errs, err), true
		case errors.As(err, &missing):
			errs = append(errs, err)
		default:
			errs = append(errs, fmt.Errorf("iptables: asking the kernel for the %s %s: %w", kind, name, err))
		}
	}
	for _, m := range xtMatches {
		check(m, false)
	}
	for _, t := range xtTargets {
		check(t, true)
	}
	return errs
}

type revisionAsk func(ctx context.Context, name string, target bool) error

// revisionAsker returns the flavor's way of asking for a revision in ns.
func (b *iptBackend) revisionAsker(ns netns.NsHandle) (revisionAsk, func(), error) {
	if b.flavor == FlavorNFT {
		c, err := nlconn.Dial(unix.NETLINK_NETFILTER, &nlconn.Config{NetNS: int(ns)})
		if err != nil {
			return nil, nil, fmt.Errorf("iptables: dialing netfilter netlink: %w", err)
		}
		return func(ctx context.Context, name string, target bool) error {
			return compatRevision(ctx, c, b.fam, name, target)
		}, func() { c.Close() }, nil
	}
	domain := unix.AF_INET
	if b.fam == IPv6 {
		domain = unix.AF_INET6
	}
	fd, err := rawSocketIn(ns, domain)
	if err != nil {
		return nil, nil, fmt.Errorf("iptables: opening a raw socket to ask x_tables: %w", err)
	}
	return func(_ context.Context, name string, target bool) error {
		return legacyRevision(fd, b.fam, name, target)
	}, func() { unix.Close(fd) }, nil
}

// compatRevision is NFNL_MSG_COMPAT_GET of nft_compat
// (include/uapi/linux/netfilter/nf_tables_compat.h).
func compatRevision(ctx context.Context, c *nlconn.Conn, fam Family, name string, target bool) error {
	const (
		subsysNFTCompat = 11 // NFNL_SUBSYS_NFT_COMPAT
		msgCompatGet    = 0  // NFNL_MSG_COMPAT_GET
		attrName        = 1  // NFTA_COMPAT_NAME
		attrRev         = 2  // NFTA_COMPAT_REV
		attrType        = 3  // NFTA_COMPAT_TYPE
	)
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = binary.BigEndian
	ae.String(attrName, name)
	ae.Uint32(attrRev, 0)
	typ := uint32(0)
	if target {
		typ = 1
	}
	ae.Uint32(attrType, typ)
	attrs, err := ae.Encode()
	if err != nil {
		return err
	}
	nfproto := byte(unix.NFPROTO_IPV4)
	if fam == IPv6 {
		nfproto = unix.NFPROTO_IPV6
	}
	_, err = c.Execute(ctx, netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(subsysNFTCompat<<8 | msgCompatGet)},
		Data:   append([]byte{nfproto, 0, 0, 0}, attrs...),
	})
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
		// nfnetlink has no compat subsystem to hand the request to.
		return &inet.UnsupportedFeatureError{Feature: "iptables-nft's xtables compatibility", Module: "nft_compat", Err: err}
	}
	return err
}

// legacyRevision is x_tables' IPT_SO_GET_REVISION_MATCH / _TARGET (or the
// ip6t ones) on a raw socket: struct xt_get_revision { char name[29]; u8
// revision; }.
func legacyRevision(fd int, fam Family, name string, target bool) error {
	level, opt := unix.SOL_IP, 66 // IPT_SO_GET_REVISION_MATCH
	if fam == IPv6 {
		level, opt = unix.SOL_IPV6, 68 // IP6T_SO_GET_REVISION_MATCH
	}
	if target {
		opt++
	}
	var rev [30]byte
	copy(rev[:29], name)
	size := uint32(len(rev))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&rev[0])), uintptr(unsafe.Pointer(&size)), 0)
	switch errno {
	case 0:
		return nil
	case unix.ENOPROTOOPT:
		m := "ip_tables"
		if fam == IPv6 {
			m = "ip6_tables"
		}
		return &inet.UnsupportedFeatureError{Feature: "iptables-legacy's x_tables (" + fam.String() + ")", Module: m, Err: errno}
	}
	return errno
}

// rawSocketIn opens a raw socket in ns (0: the calling thread's namespace).
func rawSocketIn(ns netns.NsHandle, domain int) (int, error) {
	open := func() (int, error) { return unix.Socket(domain, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW) }
	if ns <= 0 {
		return open()
	}
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// The thread enters ns and is never unlocked, so the runtime ends
		// it with the goroutine instead of reusing it elsewhere.
		runtime.LockOSThread()
		if err := netns.Set(ns); err != nil {
			ch <- result{-1, fmt.Errorf("entering network namespace: %w", err)}
			return
		}
		fd, err := open()
		ch <- result{fd, err}
	}()
	r := <-ch
	return r.fd, r.err
}
