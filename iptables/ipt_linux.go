package iptables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"

	"github.com/ipvskit/ipvskit/internal/nsfd"
	"github.com/ipvskit/ipvskit/ipset"
	"github.com/vishvananda/netns"
)

// nsRunner runs binaries inside the network namespace of ns, a descriptor
// from nsfd.Open.
type nsRunner struct{ ns netns.NsHandle }

func (r *nsRunner) run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	// Go forks from the calling thread, which nsfd.Do has put in the
	// namespace, so the child starts there.
	runErr := nsfd.Do(int(r.ns), func() error {
		cmd := exec.CommandContext(ctx, path, args...)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		return cmd.Run()
	})
	if runErr != nil {
		if msg := bytes.TrimSpace(stderr.Bytes()); len(msg) > 0 {
			return stdout.Bytes(), fmt.Errorf("%w: %s", runErr, msg)
		}
		return stdout.Bytes(), runErr
	}
	return stdout.Bytes(), nil
}

func newIPTBackend(cfg *IPTablesConfig) (*iptBackend, error) {
	fd, err := nsfd.Open(int(cfg.NetNS))
	if err != nil {
		return nil, fmt.Errorf("iptables: %w", err)
	}
	ns := netns.NsHandle(fd) // ours, closed with the back end
	closeNS := ns.Close
	run := &nsRunner{ns: ns}
	fl := cfg.Flavor
	if fl == FlavorAuto {
		if fl, err = pickFlavor(context.Background(), run, cfg.Family); err != nil {
			closeNS()
			return nil, err
		}
	} else if _, err := exec.LookPath(fl.binary(cfg.Family, "restore")); err != nil {
		closeNS()
		return nil, fmt.Errorf("iptables: %w: %w", ErrNotSupported, err)
	}
	sets, err := ipset.New(&ipset.Config{NetNS: ns})
	if err != nil {
		closeNS()
		return nil, fmt.Errorf("iptables: opening the ipset client: %w", err)
	}
	b := &iptBackend{fam: cfg.Family, flavor: fl, names: newIPTNames(cfg.Instance, cfg.KubeProxyNames), sets: sets, run: run, closer: closeNS,
		adopting: cfg.AdoptKubeProxy}
	b.cleanupOther = func(ctx context.Context) error {
		return cleanupNFTObjects(ctx, ns, cfg.Family, cfg.Instance, cfg.KubeProxyNames)
	}
	b.ownedOther = func(ctx context.Context) (*Ruleset, error) {
		return ownedNFTObjects(ctx, ns, cfg.Family, cfg.Instance, cfg.KubeProxyNames)
	}
	return b, nil
}

// ownedIPTablesObjects is the ledger of the iptables back end of instance
// in namespace ns, in either flavor (the nftables back end reads it when it
// takes over): nil if nothing of it is there, or if what has its names is
// not its own.
func ownedIPTablesObjects(ctx context.Context, ns netns.NsHandle, fam Family, instance string, kubeProxy bool) (*Ruleset, error) {
	c, err := ipset.New(&ipset.Config{NetNS: ns})
	if errors.Is(err, ErrNotSupported) {
		return nil, nil // no ipsets, no ledger
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	b := &iptBackend{fam: fam, names: newIPTNames(instance, kubeProxy), sets: c, run: &nsRunner{ns: ns}}
	r, err := b.ledger(ctx, []Flavor{FlavorLegacy, FlavorNFT})
	if errors.Is(err, fs.ErrExist) {
		return nil, nil // not its own
	}
	return r, err
}

// cleanupIPTablesObjects removes the iptables back end's objects of family
// fam in namespace ns, those of instance (with kube-proxy's names if
// kubeProxy) that carry its mark, in both flavors (used when the nftables
// back end takes over). Like Cleanup, it changes nothing and returns a
// *ForeignError if an object of those names exists without the mark.
func cleanupIPTablesObjects(ctx context.Context, ns netns.NsHandle, fam Family, instance string, kubeProxy bool) error {
	var sets setClient
	c, err := ipset.New(&ipset.Config{NetNS: ns})
	switch {
	case err == nil:
		defer c.Close()
		sets = c
	case !errors.Is(err, ErrNotSupported):
		return err
	}
	b := &iptBackend{fam: fam, names: newIPTNames(instance, kubeProxy), sets: sets, run: &nsRunner{ns: ns}}
	return b.cleanupMarked(ctx)
}
