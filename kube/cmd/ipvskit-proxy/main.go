// Command ipvskit-proxy serves a Kubernetes cluster's Services on the node
// it runs on, with ipvskit's Proxier: a drop-in for kube-proxy
// --proxy-mode=ipvs (package agent says what it does).
//
//	ipvskit-proxy --config /var/lib/kube-proxy/config.conf --backend iptables --kube-proxy-names --adopt-kube-proxy
//
// It reads kube-proxy's KubeProxyConfiguration file (--config) and names the
// fields it ignores; its own choices are flags. SIGTERM or SIGINT stops it and
// leaves the node serving; --cleanup removes everything its Proxier owns and
// exits, as kube-proxy's flag does. With --adopt-kube-proxy, --dry-run
// prints what taking the node over would change of what kube-proxy
// programmed, per Service, and exits without changing anything
// (docs/takeover.md): run it first. Run it as root, in the node's network
// namespace (hostNetwork).
//
// --version prints the version (set by make release or make image, else the
// module's from the build information) with the commit built, and exits; the
// same is logged at start. Before its first sync it runs proxier.Preflight
// and exits naming every kernel module the configuration needs that is
// missing (--preflight=false skips it). kube/deploy has the manifests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ipvskit/ipvskit/kube/agent"
	"github.com/ipvskit/ipvskit/proxier"
)

type flags struct {
	config, kubeconfig, master, hostname string
	backend, instance, families          string
	proxyName                            string
	kubeProxyNames, adopt, cleanup       bool
	dryRun                               bool
	maxDrain                             time.Duration
	verbose                              bool
	version, preflight                   bool
	metricsBind                          string
}

func main() {
	var f flags
	flag.StringVar(&f.config, "config", "", "kube-proxy's KubeProxyConfiguration file (kubeproxy.config.k8s.io/v1alpha1); empty means its defaults")
	flag.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; overrides clientConnection.kubeconfig; empty means in-cluster")
	flag.StringVar(&f.master, "master", "", "API server address; overrides the kubeconfig's")
	flag.StringVar(&f.hostname, "hostname-override", "", "the node's name; overrides hostnameOverride; default the host name")
	flag.StringVar(&f.backend, "backend", "nftables", "netfilter back end: nftables (native nft table) or iptables (ipsets and iptables-restore, as kube-proxy)")
	flag.StringVar(&f.instance, "instance", "", "ipvskit instance name of the kernel objects (default ipvskit); see --kube-proxy-names")
	flag.BoolVar(&f.kubeProxyNames, "kube-proxy-names", false, "use kube-proxy's names (kube-ipvs0, KUBE-* chains and ipsets), to take over or hand back a kube-proxy node")
	flag.BoolVar(&f.adopt, "adopt-kube-proxy", false, "with --kube-proxy-names: take over what a stopped kube-proxy left in place, without a blip (docs/takeover.md)")
	flag.StringVar(&f.families, "families", "ipv4", "IP families served: ipv4, ipv6 or ipv4,ipv6")
	flag.StringVar(&f.proxyName, "service-proxy-name", "", "serve only the Services labelled service.kubernetes.io/service-proxy-name=NAME (to run beside kube-proxy); empty serves the unlabelled ones, as kube-proxy")
	flag.DurationVar(&f.maxDrain, "max-drain", 0, "how long a removed TCP endpoint drains at most (0: 15m)")
	flag.BoolVar(&f.dryRun, "dry-run", false, "with --adopt-kube-proxy: print what the take-over would change of what kube-proxy programmed, per Service, and exit without changing anything")
	flag.BoolVar(&f.cleanup, "cleanup", false, "remove everything this instance's Proxier owns, then exit")
	flag.BoolVar(&f.verbose, "v", false, "log every sync")
	flag.BoolVar(&f.version, "version", false, "print the version and exit")
	flag.BoolVar(&f.preflight, "preflight", true, "before the first sync, probe the kernel for every module the configuration needs and exit naming each one missing")
	flag.StringVar(&f.metricsBind, "metrics-bind-address", "", "host:port of /metrics; overrides metricsBindAddress (default 127.0.0.1:10249)")
	flag.Parse()
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, f, log, os.Stdout); err != nil {
		log.Error("ipvskit-proxy", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags, log *slog.Logger, stdout io.Writer) error {
	b := readBuild()
	if f.version {
		_, err := fmt.Fprintln(stdout, b)
		return err
	}
	log.Info("ipvskit-proxy starting", b.attrs()...)
	if f.dryRun && (!f.adopt || f.cleanup) {
		return errors.New("--dry-run previews a take-over: it needs --adopt-kube-proxy, and not --cleanup")
	}
	cfg, err := loadConfig(f, log)
	if err != nil {
		return err
	}
	pc, err := proxierConfig(f)
	if err != nil {
		return err
	}
	if f.preflight && !f.cleanup && !f.dryRun {
		if err := preflight(ctx, pc, cfg, 0); err != nil {
			return err
		}
	}
	k, err := agent.OpenKernel(0)
	if err != nil {
		return err
	}
	defer k.Close()
	if f.cleanup {
		p, err := k.NewProxier(pc)
		if err != nil {
			return err
		}
		return p.Cleanup(ctx)
	}
	client, err := newClient(f, cfg)
	if err != nil {
		return err
	}
	node := firstOf(f.hostname, cfg.HostnameOverride)
	if node == "" {
		if node, err = os.Hostname(); err != nil {
			return err
		}
		node = strings.ToLower(node)
	}
	a, err := agent.New(agent.Options{
		Config: cfg, NodeName: node, Client: client, Proxier: *pc,
		NewProxier: k.NewProxier, SetTimeouts: k.SetTimeouts, NodeAddresses: k.NodeAddresses,
		ServiceProxyName: f.proxyName, Logger: log,
	})
	if err != nil {
		return err
	}
	if f.dryRun {
		tp, err := a.PreviewTakeover(ctx)
		if err != nil {
			return err
		}
		_, err = tp.WriteTo(stdout)
		return err
	}
	return a.Run(ctx)
}

// loadConfig reads --config (kube-proxy's defaults without it), warns of the
// fields it ignores, and applies the flags that override the file.
func loadConfig(f flags, log *slog.Logger) (*agent.Config, error) {
	cfg := agent.DefaultConfig()
	if f.config != "" {
		file, err := os.Open(f.config)
		if err != nil {
			return nil, err
		}
		cfg, err = agent.LoadConfig(file)
		file.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.config, err)
		}
	}
	if len(cfg.Ignored) > 0 {
		log.Warn("KubeProxyConfiguration fields ignored", "fields", strings.Join(cfg.Ignored, ", "))
	}
	if len(cfg.Unknown) > 0 {
		log.Warn("KubeProxyConfiguration has unknown fields", "fields", strings.Join(cfg.Unknown, "; "))
	}
	if f.metricsBind != "" {
		if _, _, err := net.SplitHostPort(f.metricsBind); err != nil {
			return nil, fmt.Errorf("--metrics-bind-address %q: want host:port", f.metricsBind)
		}
		cfg.MetricsBindAddress = f.metricsBind
	}
	return cfg, nil
}

func proxierConfig(f flags) (*proxier.Config, error) {
	pc := &proxier.Config{Instance: f.instance, KubeProxyNames: f.kubeProxyNames, AdoptKubeProxy: f.adopt, MaxDrain: f.maxDrain}
	switch f.backend {
	case "nftables":
		pc.Backend = proxier.NFTables
	case "iptables":
		pc.Backend = proxier.IPTables
	default:
		return nil, fmt.Errorf("--backend %q: want nftables or iptables", f.backend)
	}
	for _, s := range strings.Split(f.families, ",") {
		switch strings.TrimSpace(s) {
		case "ipv4":
			pc.Families = append(pc.Families, proxier.IPv4)
		case "ipv6":
			pc.Families = append(pc.Families, proxier.IPv6)
		default:
			return nil, fmt.Errorf("--families %q: want ipv4, ipv6 or ipv4,ipv6", f.families)
		}
	}
	if err := pc.Validate(); err != nil {
		return nil, err
	}
	return pc, nil
}

func newClient(f flags, cfg *agent.Config) (kubernetes.Interface, error) {
	path := firstOf(f.kubeconfig, cfg.Kubeconfig)
	rc, err := clientcmd.BuildConfigFromFlags(f.master, path)
	if err != nil {
		return nil, fmt.Errorf("API server configuration: %w", err)
	}
	rc.QPS, rc.Burst, rc.ContentType = cfg.QPS, cfg.Burst, cfg.ContentType
	rc.UserAgent = "ipvskit-proxy"
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	return c, nil
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
