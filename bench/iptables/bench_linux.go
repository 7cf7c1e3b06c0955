package rulesbench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/iptables"
	"github.com/vishvananda/netns"
)

// inNewNS runs f on a locked thread inside a fresh network namespace (with
// its handle) and throws the thread away afterwards.
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

// run runs a program on the calling (locked, in-namespace) thread.
func run(stdin, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, stderr.String())
	}
	return nil
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// Side is one contender: a full sync of the model into an empty namespace,
// or (Delta set) the one-service change applied after an untimed full sync.
type Side func(base *iptables.Ruleset, d *Delta) (time.Duration, error)

// IPTablesBackend times the iptables back end (nft flavor).
func IPTablesBackend(base *iptables.Ruleset, d *Delta) (time.Duration, error) {
	var t time.Duration
	err := inNewNS(func(ns netns.NsHandle) error {
		ctx := context.Background()
		b, err := iptables.NewIPTables(&iptables.IPTablesConfig{NetNS: ns, Flavor: iptables.FlavorNFT})
		if err != nil {
			return err
		}
		defer b.Close()
		if d == nil {
			t, err = timed(func() error { return b.Apply(ctx, base) })
			return err
		}
		// The proxier keeps one Ruleset and changes it between syncs.
		r := base.Clone()
		if err := b.Apply(ctx, r); err != nil {
			return err
		}
		d.Mutate(r)
		t, err = timed(func() error { return b.Apply(ctx, r) })
		return err
	})
	return t, err
}

// kubeNames renders the reference side with kube-proxy's names, those of the
// ipsets IPSetRestore writes.
var kubeNames = &iptables.IPTablesConfig{KubeProxyNames: true}

// IPTablesReference times `ipset restore` + `iptables-nft-restore --noflush`
// doing the same work: for a full sync, creating and filling every set and
// writing the rules and jumps; for the delta, adding the new members (and,
// in RefWithRules, rewriting the rules as kube-proxy does on every sync).
func IPTablesReference(withRules bool) Side {
	return func(base *iptables.Ruleset, d *Delta) (time.Duration, error) {
		rules, jumps, err := IPTablesRestoreInput(base)
		if err != nil {
			return 0, err
		}
		sets := IPSetRestore(base)
		var t time.Duration
		err = inNewNS(func(netns.NsHandle) error {
			full := func() error {
				if err := run(sets, "ipset", "restore"); err != nil {
					return err
				}
				return run(rules+jumps, "iptables-nft-restore", "-w", "--noflush")
			}
			if d == nil {
				var err error
				t, err = timed(full)
				return err
			}
			if err := full(); err != nil {
				return err
			}
			var err error
			t, err = timed(func() error {
				if err := run(d.IPSet, "ipset", "restore"); err != nil {
					return err
				}
				if withRules {
					return run(rules, "iptables-nft-restore", "-w", "--noflush")
				}
				return nil
			})
			return err
		})
		return t, err
	}
}

// IPTablesRestoreInput returns base's rules (the owned chains) and the jump
// rules into them, each as `iptables-restore --noflush` input with
// kube-proxy's names, those of the ipsets IPSetRestore writes.
func IPTablesRestoreInput(base *iptables.Ruleset) (rules, jumps string, err error) {
	rules, err = iptables.RenderIPTables(base, kubeNames)
	if err != nil {
		return "", "", err
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(iptables.RenderIPTablesJumps(kubeNames)), "\n") {
		table, rule, _ := strings.Cut(l, " ")
		fmt.Fprintf(&b, "*%s\n%s\nCOMMIT\n", table, strings.Replace(rule, "-A ", "-I ", 1))
	}
	return rules, b.String(), nil
}

// IPTablesReferenceSplit is IPTablesReference(false) for a full sync, with
// the time of `ipset restore` and that of `iptables-nft-restore` apart.
func IPTablesReferenceSplit(base *iptables.Ruleset) (ipsetTime, restoreTime time.Duration, err error) {
	rules, jumps, err := IPTablesRestoreInput(base)
	if err != nil {
		return 0, 0, err
	}
	sets := IPSetRestore(base)
	err = inNewNS(func(netns.NsHandle) error {
		var err error
		if ipsetTime, err = timed(func() error { return run(sets, "ipset", "restore") }); err != nil {
			return err
		}
		restoreTime, err = timed(func() error { return run(rules+jumps, "iptables-nft-restore", "-w", "--noflush") })
		return err
	})
	return ipsetTime, restoreTime, err
}

// NFTablesBackend times the nftables back end.
func NFTablesBackend(base *iptables.Ruleset, d *Delta) (time.Duration, error) {
	var t time.Duration
	err := inNewNS(func(ns netns.NsHandle) error {
		ctx := context.Background()
		b, err := iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: ns})
		if err != nil {
			return err
		}
		defer b.Close()
		if d == nil {
			// The first Apply also removes iptables leftovers (execs of
			// iptables-save), once per process: not part of the sync being
			// compared, so it happens untimed, with an empty ruleset.
			if err := b.Apply(ctx, iptables.NewRuleset(base.Family, base.Options)); err != nil {
				return err
			}
			t, err = timed(func() error { return b.ApplyFull(ctx, base) })
			return err
		}
		// The proxier keeps one Ruleset and changes it between syncs.
		r := base.Clone()
		if err := b.Apply(ctx, r); err != nil {
			return err
		}
		d.Mutate(r)
		t, err = timed(func() error { return b.Apply(ctx, r) })
		return err
	})
	return t, err
}

// NFTReference times `nft -f` doing the same work: the rendered script for a
// full sync, `add element` lines for the delta.
func NFTReference(base *iptables.Ruleset, d *Delta) (time.Duration, error) {
	script, err := iptables.RenderNFT(base, "")
	if err != nil {
		return 0, err
	}
	var t time.Duration
	err = inNewNS(func(netns.NsHandle) error {
		if d == nil {
			var err error
			t, err = timed(func() error { return run(script, "nft", "-f", "-") })
			return err
		}
		if err := run(script, "nft", "-f", "-"); err != nil {
			return err
		}
		var err error
		t, err = timed(func() error { return run(d.NFT, "nft", "-f", "-") })
		return err
	})
	return t, err
}
