// Package ipsetbench times ipvskit's ipset.Client.Replace against Debian's
// `ipset restore` of the same entries, each in a fresh network namespace.
package ipsetbench

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/ipset"
	"github.com/vishvananda/netns"
)

// SetName is the set both sides fill.
const SetName = "KUBE-CLUSTER-IP"

// Entries returns n distinct hash:ip,port entries from 198.18.0.0/15.
func Entries(n int) []ipset.Entry {
	out := make([]ipset.Entry, n)
	for i := range out {
		out[i] = ipset.Entry{
			IP:    netip.AddrFrom4([4]byte{198, 18 + byte(i>>16&1), byte(i >> 8), byte(i)}),
			Proto: []ipset.Protocol{ipset.TCP, ipset.UDP}[i/131072%2],
			Port:  uint16(1 + i/131072/2),
		}
	}
	return out
}

// Set is the set both sides create: maxelem large enough for n entries,
// the kernel's default hashsize (so both grow the hash the same way).
func Set(n int) ipset.Set {
	return ipset.Set{Name: SetName, Type: ipset.HashIPPort, MaxElem: uint32(max(n, ipset.DefaultMaxElem))}
}

// inNewNS runs f on a locked thread inside a fresh network namespace (with
// its handle), then throws the thread away. The namespace is freed when the
// handle is closed and the thread gone.
func inNewNS(f func(ns netns.NsHandle) error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		ns, err := netns.New()
		if err != nil {
			errc <- fmt.Errorf("new netns: %w", err)
			return
		}
		defer ns.Close()
		errc <- f(ns)
	}()
	return <-errc
}

// count asks ipset (inside the current thread's namespace) how many entries
// the set has, as an independent check of both sides.
func count() (int, error) {
	out, err := exec.Command("ipset", "list", "-t", SetName).Output()
	if err != nil {
		return 0, fmt.Errorf("ipset list: %w", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "Number of entries: "); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("ipset list: no entry count in %q", out)
}

// Replace times Client.Replace of entries into a fresh namespace. With
// existing, the set first holds as many other entries, so Replace also swaps
// and destroys a full set (untimed setup).
func Replace(entries []ipset.Entry, existing bool) (time.Duration, error) {
	var d time.Duration
	err := inNewNS(func(ns netns.NsHandle) error {
		c, err := ipset.New(&ipset.Config{NetNS: ns})
		if err != nil {
			return err
		}
		defer c.Close()
		ctx := context.Background()
		if existing {
			old := make([]ipset.Entry, len(entries))
			for i, e := range entries {
				e.Port += 10000
				old[i] = e
			}
			if err := c.Replace(ctx, Set(len(entries)), old); err != nil {
				return err
			}
		}
		start := time.Now()
		if err := c.Replace(ctx, Set(len(entries)), entries); err != nil {
			return err
		}
		d = time.Since(start)
		return check(len(entries))
	})
	return d, err
}

// Restore times `ipset restore` of the same set and entries (text prepared
// beforehand, untimed) into a fresh namespace.
func Restore(entries []ipset.Entry) (time.Duration, error) {
	var text bytes.Buffer
	if err := ipset.WriteText(&text, []ipset.SetInfo{{Set: Set(len(entries)), Entries: entries}}); err != nil {
		return 0, err
	}
	var d time.Duration
	err := inNewNS(func(netns.NsHandle) error {
		cmd := exec.Command("ipset", "restore")
		cmd.Stdin = bytes.NewReader(text.Bytes())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("ipset restore: %w: %s", err, stderr.String())
		}
		d = time.Since(start)
		return check(len(entries))
	})
	return d, err
}

func check(n int) error {
	got, err := count()
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("the set holds %d entries, want %d", got, n)
	}
	return nil
}
