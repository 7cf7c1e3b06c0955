package proxier

import (
	"context"
	"slices"
	"strconv"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/vishvananda/netns"
)

// ErrNotSupported is wrapped by every error that says the kernel lacks a
// feature, in this package and in the kernel clients'. It is
// inet.ErrNotSupported, kept under this name for users of the package.
var ErrNotSupported = inet.ErrNotSupported

// UnsupportedFeatureError is one kernel feature Preflight found missing: the
// feature (e.g. "IPVS scheduler sh"), the module that provides it (e.g.
// "ip_vs_sh"), the first kernel version that has it when that matters, and
// the kernel's answer. errors.Is(err, ErrNotSupported) is true. It is
// inet.UnsupportedFeatureError, the type every package's probes return, kept
// under this name for users of the package.
type UnsupportedFeatureError = inet.UnsupportedFeatureError

// PreflightOptions says what Preflight checks beyond what the Config
// implies. A nil *PreflightOptions means the zero value.
type PreflightOptions struct {
	// Schedulers are the IPVS schedulers the Services will name; empty
	// means rr, the default (a Service without a Scheduler uses rr, so
	// list it too when some do).
	Schedulers []string
	// NoConntrack leaves ctnetlink (module nf_conntrack_netlink) out, for a
	// Proxier made without Deps.Conntrack.
	NoConntrack bool
}

// Preflight checks, before anything is changed, that the kernel of the
// network namespace ns (0: the caller's; otherwise an open descriptor of
// it, which Preflight does not close, as Open takes it) has every feature a Proxier for cfg
// needs:
//
//   - IPVS (ip_vs) and each scheduler in opts.Schedulers (ip_vs_<name>);
//   - dummy links (dummy);
//   - per family of cfg.Families, with Backend NFTables: nf_tables and each
//     set type, chain type and expression the table uses (nft_ct,
//     nft_fib_ipv4, nft_masq, nft_reject_ipv4, nft_chain_nat, ...); with
//     IPTables: the iptables binaries, each ipset type (ip_set_hash_ipport,
//     ...) and each match and target of the rules (xt_set, xt_comment,
//     xt_mark, xt_MASQUERADE, ...);
//   - unless opts.NoConntrack, conntrack netlink (nf_conntrack_netlink);
//   - each sysctl of the profile Sync applies (net/ipv4/vs/* from ip_vs,
//     net/bridge/bridge-nf-call-iptables from br_netfilter, ...).
//
// It returns nil, or every problem joined with errors.Join: one
// *UnsupportedFeatureError per missing module (naming the first feature
// that needs it), and any other failure of a probe as it is. So a user sees
// every missing module at once. A Config or options that do not validate
// are a *ValidationError, and nothing is probed.
//
// The probes change nothing in the namespace: each asks the kernel in a way
// it refuses after finding the feature and before making anything (an
// invalid IPv6 fwmark service for a scheduler, a dummy link with a
// multicast address), reads (ipset type and xtables revision queries,
// conntrack counters, sysctls), or, for nftables, makes a throw-away table
// under a random ipvskit-probe-* name and deletes it at once. A kernel that
// loads modules on demand loads those the probes ask for, as Sync would.
func Preflight(ctx context.Context, cfg *Config, ns netns.NsHandle, opts *PreflightOptions) error {
	if cfg == nil {
		cfg = &Config{}
	}
	if opts == nil {
		opts = &PreflightOptions{}
	}
	v := &validator{}
	v.config(cfg)
	v.netns("netns", int(ns))
	for i, s := range opts.Schedulers {
		base := "preflight.schedulers[" + strconv.Itoa(i) + "]"
		if s == "" {
			v.add(base+".scheduler", `""`, "is empty (rr is the default)")
			continue
		}
		v.scheduler(base, s, 0)
	}
	if err := v.err(); err != nil {
		return err
	}
	return preflight(ctx, cfg, ns, opts)
}

// needKind is a family of probes.
type needKind uint8

const (
	needIPVS needKind = iota + 1
	needScheduler
	needDummy
	needNFTables
	needIPTables
	needConntrack
	needSysctl
)

// need is one probe Preflight runs: name is the scheduler or the sysctl
// key; family is the rules' family.
type need struct {
	kind   needKind
	name   string
	family Family
}

// needs derives, without a kernel, what a Proxier for cfg uses, in the
// order Preflight probes it. profile is the sysctl profile it applies
// (Sysctls.IPVSProfile of sysctlOptions(cfg)).
func needs(cfg *Config, opts *PreflightOptions, profile sysctl.Profile) []need {
	out := []need{{kind: needIPVS}}
	scheds := slices.Clone(opts.Schedulers)
	if len(scheds) == 0 {
		scheds = []string{"rr"}
	}
	slices.Sort(scheds)
	for _, s := range slices.Compact(scheds) {
		out = append(out, need{kind: needScheduler, name: s})
	}
	out = append(out, need{kind: needDummy})
	fams := enabledFamilies(cfg)
	for _, f := range []Family{IPv4, IPv6} {
		if !fams[f] {
			continue
		}
		k := needNFTables
		if cfg.Backend == IPTables {
			k = needIPTables
		}
		out = append(out, need{kind: k, family: f})
	}
	if !opts.NoConntrack {
		out = append(out, need{kind: needConntrack})
	}
	for _, s := range profile {
		out = append(out, need{kind: needSysctl, name: s.Key})
	}
	return out
}

// sysctlOptions are the options of the profile a Proxier for cfg applies.
func sysctlOptions(cfg *Config) *sysctl.IPVSOptions {
	return &sysctl.IPVSOptions{StrictARP: cfg.StrictARP, IPv6: enabledFamilies(cfg)[IPv6]}
}
