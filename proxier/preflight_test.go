package proxier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/vishvananda/netns"
)

// needList renders needs as short words, for comparing.
func needList(ns []need) []string {
	var out []string
	for _, n := range ns {
		switch n.kind {
		case needIPVS:
			out = append(out, "ipvs")
		case needScheduler:
			out = append(out, "sched "+n.name)
		case needDummy:
			out = append(out, "dummy")
		case needNFTables:
			out = append(out, "nftables "+n.family.String())
		case needIPTables:
			out = append(out, "iptables "+n.family.String())
		case needConntrack:
			out = append(out, "conntrack")
		case needSysctl:
			out = append(out, "sysctl "+n.name)
		default:
			out = append(out, fmt.Sprintf("need(%d)", n.kind))
		}
	}
	return out
}

func TestNeedsFollowTheConfig(t *testing.T) {
	v61 := sysctl.KernelVersion{Major: 6, Minor: 1}
	base := []string{"sysctl net/ipv4/vs/conntrack", "sysctl net/ipv4/vs/expire_nodest_conn",
		"sysctl net/ipv4/vs/expire_quiescent_template", "sysctl net/ipv4/ip_forward",
		"sysctl net/ipv4/conf/all/route_localnet"}
	bridge := "sysctl net/bridge/bridge-nf-call-iptables"
	for _, tc := range []struct {
		name    string
		cfg     Config
		opts    PreflightOptions
		kernel  sysctl.KernelVersion
		exact   bool // want is all of it, in order; else a subset
		want    []string
		wantNot []string
	}{{
		name:   "zero config: rr, nftables IPv4, conntrack, the base profile",
		kernel: v61, exact: true,
		want: slices.Concat([]string{"ipvs", "sched rr", "dummy", "nftables IPv4", "conntrack"},
			base, []string{bridge}),
	}, {
		name: "iptables, both families, strict ARP, schedulers deduplicated and sorted, no conntrack",
		cfg:  Config{Backend: IPTables, Families: []Family{IPv6, IPv4}, StrictARP: true},
		opts: PreflightOptions{Schedulers: []string{"sh", "mh", "sh"}, NoConntrack: true}, kernel: v61, exact: true,
		want: slices.Concat([]string{"ipvs", "sched mh", "sched sh", "dummy", "iptables IPv4", "iptables IPv6"},
			base, []string{"sysctl net/ipv6/conf/all/forwarding", bridge,
				"sysctl net/ipv4/conf/all/arp_ignore", "sysctl net/ipv4/conf/all/arp_announce"}),
	}, {
		name: "IPv6 only: no IPv4 rules, but the IPv4 sysctls stay (IPVS's own keys live there)",
		cfg:  Config{Families: []Family{IPv6}}, kernel: v61,
		want:    []string{"ipvs", "sched rr", "dummy", "nftables IPv6", "conntrack", "sysctl net/ipv6/conf/all/forwarding"},
		wantNot: []string{"nftables IPv4", "iptables IPv6"},
	}, {
		name:   "a kernel before 5.9 also needs conn_reuse_mode",
		kernel: sysctl.KernelVersion{Major: 5, Minor: 4},
		want:   []string{"sysctl net/ipv4/vs/conn_reuse_mode"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			profile, err := sysctl.IPVSProfile(tc.kernel, sysctlOptions(&tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			got := needList(needs(&tc.cfg, &tc.opts, profile))
			if tc.exact {
				if !slices.Equal(got, tc.want) {
					t.Fatalf("needs:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
				}
				return
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("needs lack %q: %q", w, got)
				}
			}
			for _, w := range tc.wantNot {
				if slices.Contains(got, w) {
					t.Errorf("needs have %q: %q", w, got)
				}
			}
		})
	}
}

func TestPreflightValidatesBeforeProbing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   *Config
		fd    int
		opts  *PreflightOptions
		paths []string
	}{
		{"unknown scheduler", nil, 0, &PreflightOptions{Schedulers: []string{"rr", "fastest"}}, []string{"preflight.schedulers[1].scheduler"}},
		{"empty scheduler", nil, 0, &PreflightOptions{Schedulers: []string{""}}, []string{"preflight.schedulers[0].scheduler"}},
		{"negative namespace", nil, -1, nil, []string{"netns"}},
		{"bad instance and fd together", &Config{Instance: "Kube!"}, -3, nil, []string{"config.instance", "netns"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A cancelled context: had anything been probed, its error
			// would be a context error, not a validation error.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := Preflight(ctx, tc.cfg, netns.NsHandle(tc.fd), tc.opts)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err %v, want a *ValidationError", err)
			}
			var paths []string
			for _, p := range ve.Problems {
				paths = append(paths, p.Path)
			}
			if !slices.Equal(paths, tc.paths) {
				t.Errorf("problems at %q, want %q: %v", paths, tc.paths, err)
			}
		})
	}
}

func TestUnsupportedFeatureErrorNamesTheModule(t *testing.T) {
	cause := errors.New("no such file or directory")
	var err error = &UnsupportedFeatureError{Feature: "IPVS scheduler twos", Module: "ip_vs_twos", MinKernel: "6.2", Err: cause}
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, cause) {
		t.Errorf("errors.Is: ErrNotSupported %v, cause %v; want both", errors.Is(err, ErrNotSupported), errors.Is(err, cause))
	}
	for _, want := range []string{"IPVS scheduler twos", "module ip_vs_twos", "Linux 6.2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}
