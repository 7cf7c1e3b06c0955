package cni

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/vishvananda/netns"

	"github.com/ipvskit/ipvskit/proxier"
)

// Timeout bounds one command: opening the namespace's clients and one Sync,
// Reconcile or Cleanup.
const Timeout = 2 * time.Minute

// Versions are the CNI spec versions the plugin speaks: those with a
// prevResult (0.3.0 on), as a chained plugin needs.
func Versions() version.PluginInfo {
	return version.PluginSupports("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0")
}

// Add makes the namespace CNI_NETNS names serve the stanza's services (a
// Sync of its State), then prints the previous plugin's result, or an
// empty one when the plugin runs alone. Running it again with the same
// stanza changes nothing; with another, the namespace serves the new one.
func Add(args *skel.CmdArgs) error {
	conf, err := Parse(args.StdinData)
	if err != nil {
		return err
	}
	err = withProxier(args.Netns, conf, func(ctx context.Context, p *proxier.Proxier) error {
		if _, err := p.Sync(ctx, conf.State()); err != nil {
			return fmt.Errorf("ipvskit: serving the services in %s: %w", args.Netns, err)
		}
		return nil
	})
	if err != nil {
		return asCNIError(err)
	}
	res := conf.PrevResult
	if res == nil {
		res = &current.Result{CNIVersion: current.ImplementedSpecVersion}
	}
	return types.PrintResult(res, conf.CNIVersion)
}

// Del removes what the plugin owns in the namespace (the Proxier's
// Cleanup): its virtual servers, VIP link and rules, nothing of another
// program's. A namespace that is gone, or none given, leaves nothing to
// remove, and is no error; running it again finds nothing and succeeds.
func Del(args *skel.CmdArgs) error {
	conf, err := Parse(args.StdinData)
	if err != nil {
		return err
	}
	if args.Netns == "" {
		return nil
	}
	if gone, err := netnsGone(args.Netns); err != nil {
		return types.NewError(types.ErrInvalidNetNS, fmt.Sprintf("ipvskit: %s: %v", args.Netns, err), "")
	} else if gone {
		return nil
	}
	err = withProxier(args.Netns, conf, func(ctx context.Context, p *proxier.Proxier) error {
		if err := p.Cleanup(ctx); err != nil {
			return fmt.Errorf("ipvskit: cleaning up in %s: %w", args.Netns, err)
		}
		return nil
	})
	return asCNIError(err)
}

// Check verifies that the namespace still serves the stanza's services as
// Add left them. A new process knows nothing of what Add applied, so it
// reads back what the Proxier owns and syncs the State (Sync), then runs
// Reconcile: every virtual server, destination or VIP the Sync had to
// make, change or remove, and every drift Reconcile repaired, is drift,
// reported in one error (code types.ErrInternal). Check therefore repairs
// what it reports, as Reconcile does: a second Check passes.
func Check(args *skel.CmdArgs) error {
	conf, err := Parse(args.StdinData)
	if err != nil {
		return err
	}
	err = withProxier(args.Netns, conf, func(ctx context.Context, p *proxier.Proxier) error {
		res, err := p.Sync(ctx, conf.State())
		if err != nil {
			return fmt.Errorf("ipvskit: reading back the services in %s: %w", args.Netns, err)
		}
		rep, err := p.Reconcile(ctx)
		if err != nil {
			return fmt.Errorf("ipvskit: reconciling the services in %s: %w", args.Netns, err)
		}
		if d := drift(res.Plan, rep); len(d) > 0 {
			return types.NewError(types.ErrInternal,
				fmt.Sprintf("ipvskit: %s did not serve the services as configured; repaired by: %s", args.Netns, joinDrift(d)), "")
		}
		return nil
	})
	return asCNIError(err)
}

// withProxier opens a Proxier in the namespace at path for conf, runs f
// with it under Timeout (and SIGTERM), and closes it.
func withProxier(path string, conf *NetConf, f func(context.Context, *proxier.Proxier) error) error {
	if path == "" {
		return types.NewError(types.ErrInvalidEnvironmentVariables, "ipvskit: CNI_NETNS is empty", "")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	h, err := netns.GetFromPath(path)
	if err != nil {
		return types.NewError(types.ErrInvalidNetNS, fmt.Sprintf("ipvskit: opening the network namespace %s: %v", path, err), "")
	}
	defer h.Close()
	p, err := proxier.Open(ctx, conf.ProxierConfig(), h)
	if err != nil {
		return fmt.Errorf("ipvskit: in %s: %w", path, err)
	}
	return errors.Join(f(ctx, p), p.Close())
}

// asCNIError returns err as a *types.Error: one already is; a
// *proxier.ValidationError (a namespace that is not one, an instance name
// refused) is types.ErrInvalidNetworkConfig; anything else types.ErrInternal.
func asCNIError(err error) error {
	if err == nil {
		return nil
	}
	var ce *types.Error
	if errors.As(err, &ce) {
		return ce
	}
	var ve *proxier.ValidationError
	if errors.As(err, &ve) {
		return types.NewError(types.ErrInvalidNetworkConfig, err.Error(), "")
	}
	return types.NewError(types.ErrInternal, err.Error(), "")
}
