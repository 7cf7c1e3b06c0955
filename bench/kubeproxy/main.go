// Command kube-proxy-oracle runs kube-proxy's real IPVS proxier (the
// k8s.io/kubernetes module's pkg/proxy/ipvs, at the version go.mod names) in
// the current network namespace, fed from a file of Services and
// EndpointSlices instead of an API server. ipvskit's tests and benchmarks use
// it as the reference: whatever it leaves in the kernel is what kube-proxy
// would have left on a node with those objects.
//
//	kube-proxy-oracle -state objects.yaml -node node-a -node-ip 198.18.0.10 [-once]
//
// The file holds what `kubectl get svc,endpointslices -A -o yaml` (or -o
// json) writes: a List, or several documents separated by "---"; other kinds
// are ignored. The oracle syncs once at the start, then again each time the
// file is replaced or written, and each time a line "sync" arrives on standard
// input (a sync without a change is kube-proxy's periodic full resync). After
// every sync it writes one JSON line to standard output: the sync's number,
// its wall time, and how many calls it made to kube-proxy's IPVS, ipset and
// iptables utilities. It exits on SIGTERM, SIGINT, end of standard input or a
// line "exit", leaving the kernel state as it is (kube-proxy does the same);
// -cleanup runs kube-proxy's own cleanup of its IPVS-mode state and exits.
//
// Each sync is run directly, as kube-proxy's first sync is, rather than
// through its rate-limited sync loop, so that one change makes exactly one
// sync and the time measured is that sync's alone.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/proxy"
	proxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	"k8s.io/kubernetes/pkg/proxy/healthcheck"
	"k8s.io/kubernetes/pkg/proxy/ipvs"
	utilipset "k8s.io/kubernetes/pkg/proxy/ipvs/ipset"
	utilipvs "k8s.io/kubernetes/pkg/proxy/ipvs/util"
	proxyutil "k8s.io/kubernetes/pkg/proxy/util"
	utiliptables "k8s.io/kubernetes/pkg/util/iptables"
)

type options struct {
	state         string
	node          string
	nodeIPs       string
	nodePortAddrs string
	clusterCIDRs  string
	scheduler     string
	excludeCIDRs  string
	masqueradeAll bool
	strictARP     bool
	once          bool
	cleanup       bool
	verbosity     int
}

func main() {
	var o options
	flag.StringVar(&o.state, "state", "", "file of Services and EndpointSlices (YAML or JSON)")
	flag.StringVar(&o.node, "node", "node", "the node's name (endpoints with this nodeName are local)")
	flag.StringVar(&o.nodeIPs, "node-ip", "", "the node's IPs, comma-separated, at most one per family; the families of these IPs are proxied")
	flag.StringVar(&o.nodePortAddrs, "nodeport-addresses", "", "kube-proxy's --nodeport-addresses (comma-separated CIDRs, or primary)")
	flag.StringVar(&o.clusterCIDRs, "cluster-cidr", "", "kube-proxy's --cluster-cidr (comma-separated), for detect-local-mode ClusterCIDR")
	flag.StringVar(&o.scheduler, "ipvs-scheduler", "rr", "kube-proxy's --ipvs-scheduler")
	flag.BoolVar(&o.masqueradeAll, "masquerade-all", false, "kube-proxy's --masquerade-all")
	flag.BoolVar(&o.strictARP, "ipvs-strict-arp", false, "kube-proxy's --ipvs-strict-arp")
	flag.StringVar(&o.excludeCIDRs, "ipvs-exclude-cidrs", "", "kube-proxy's --ipvs-exclude-cidrs (comma-separated)")
	flag.BoolVar(&o.once, "once", false, "sync once and exit")
	flag.BoolVar(&o.cleanup, "cleanup", false, "run kube-proxy's IPVS-mode cleanup and exit")
	flag.IntVar(&o.verbosity, "v", 0, "kube-proxy's log verbosity (logs go to standard error)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "kube-proxy-oracle:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	logs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(logs)
	_ = logs.Set("v", fmt.Sprint(o.verbosity))
	_ = logs.Set("logtostderr", "true")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if o.cleanup {
		if ipvs.CleanupLeftovers(ctx) {
			return errors.New("kube-proxy's cleanup reported errors (see standard error)")
		}
		return nil
	}
	if o.state == "" {
		return errors.New("-state is required")
	}
	objs, err := loadFile(o.state)
	if err != nil {
		return err
	}
	counts := &counters{}
	p, err := newProxier(ctx, o, counts)
	if err != nil {
		return err
	}
	w := &world{p: p}
	out := json.NewEncoder(os.Stdout)
	sync := func(next objects) error {
		before := counts.snapshot()
		start := time.Now()
		w.apply(next)
		d := time.Since(start)
		w.n++
		return out.Encode(report{Sync: w.n, Seconds: d.Seconds(), Services: len(next.services),
			Slices: len(next.slices), Calls: counts.snapshot().minus(before)})
	}
	if err := sync(objs); err != nil {
		return err
	}
	if o.once {
		return nil
	}
	return loop(ctx, o.state, func() error {
		next, err := loadFile(o.state)
		if err != nil {
			// A half-written file is not a reason to stop: say so, keep
			// the last state, and wait for the next change.
			fmt.Fprintln(os.Stderr, "kube-proxy-oracle:", err)
			return nil
		}
		return sync(next)
	})
}

// report is the line written after each sync.
type report struct {
	Sync     int     `json:"sync"`
	Seconds  float64 `json:"seconds"`
	Services int     `json:"services"`
	Slices   int     `json:"slices"`
	Calls    calls   `json:"calls"`
}

// loop waits for a change of the file, a "sync" line or the end.
func loop(ctx context.Context, file string, sync func() error) error {
	changed, err := watch(ctx, file)
	if err != nil {
		return err
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
		close(lines)
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			if err := sync(); err != nil {
				return err
			}
		case l, ok := <-lines:
			switch {
			case !ok || l == "exit":
				return nil
			case l == "sync":
				if err := sync(); err != nil {
					return err
				}
			case l != "":
				fmt.Fprintf(os.Stderr, "kube-proxy-oracle: unknown command %q (sync, exit)\n", l)
			}
		}
	}
}

// newProxier makes kube-proxy's IPVS proxier (dual-stack when the node has
// an IP of each family) with kube-proxy's real utilities, counted.
func newProxier(ctx context.Context, o options, counts *counters) (proxy.Provider, error) {
	nodeIPs := map[v1.IPFamily]net.IP{}
	for _, s := range split(o.nodeIPs) {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("-node-ip: %q is not an IP address", s)
		}
		fam := v1.IPv4Protocol
		if ip.To4() == nil {
			fam = v1.IPv6Protocol
		}
		if nodeIPs[fam] != nil {
			return nil, fmt.Errorf("-node-ip: two %s addresses", fam)
		}
		nodeIPs[fam] = ip
	}
	if len(nodeIPs) == 0 {
		return nil, errors.New("-node-ip is required")
	}
	masqBit := int32(14)
	cfg := &proxyconfig.KubeProxyConfiguration{
		Mode:              proxyconfig.ProxyModeIPVS,
		NodePortAddresses: split(o.nodePortAddrs),
		// Syncs are run directly (see the package comment); the loop
		// that these periods pace never runs.
		SyncPeriod:    metav1.Duration{Duration: time.Hour},
		MinSyncPeriod: metav1.Duration{Duration: 0},
		IPTables:      proxyconfig.KubeProxyIPTablesConfiguration{MasqueradeBit: &masqBit},
		IPVS: proxyconfig.KubeProxyIPVSConfiguration{
			Scheduler:    o.scheduler,
			StrictARP:    o.strictARP,
			ExcludeCIDRs: split(o.excludeCIDRs),
		},
		Linux: proxyconfig.KubeProxyLinuxConfiguration{MasqueradeAll: o.masqueradeAll},
	}
	detectors := map[v1.IPFamily]proxyutil.LocalTrafficDetector{
		v1.IPv4Protocol: proxyutil.NewNoOpLocalDetector(),
		v1.IPv6Protocol: proxyutil.NewNoOpLocalDetector(),
	}
	if cidrs := split(o.clusterCIDRs); len(cidrs) > 0 {
		cfg.DetectLocalMode = proxyconfig.LocalModeClusterCIDR
		cfg.DetectLocal.ClusterCIDRs = cidrs
		for fam, cs := range proxyutil.MapCIDRsByIPFamily(cidrs) {
			detectors[fam] = proxyutil.NewDetectLocalByCIDR(cs[0].String())
		}
	}
	ipvsCounted := &countedIPVS{Interface: utilipvs.New(), c: counts}
	ipsetCounted := &countedIPSet{Interface: utilipset.New(), c: counts}
	if err := ipvs.CanUseIPVSProxier(ctx, ipvsCounted, ipsetCounted, o.scheduler); err != nil {
		return nil, fmt.Errorf("kube-proxy says it cannot use IPVS here: %w", err)
	}
	ipts := map[v1.IPFamily]utiliptables.Interface{}
	for fam, ipt := range utiliptables.NewBestEffort() {
		ipts[fam] = &countedIPTables{Interface: ipt, c: counts}
	}
	recorder := &events.FakeRecorder{}
	health := healthcheck.NewProxyHealthServer("", time.Hour, nil)
	if len(nodeIPs) == 2 {
		return ipvs.NewDualStackProxier(ctx, cfg, ipts, ipvsCounted, ipsetCounted, utilsysctl.New(),
			detectors, o.node, nodeIPs, recorder, health, false)
	}
	for fam, ip := range nodeIPs {
		if ipts[fam] == nil {
			return nil, fmt.Errorf("no usable iptables for %s", fam)
		}
		return ipvs.NewProxier(ctx, cfg, fam, ipts[fam], ipvsCounted, ipsetCounted, utilsysctl.New(),
			detectors[fam], o.node, ip, recorder, health, false)
	}
	panic("unreachable")
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
