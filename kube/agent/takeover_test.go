package agent

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/kube/internal/apiservertest"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// lockedBuffer is a log destination several goroutines write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// kubeProxyFakes are fakes holding what kube-proxy programmed for web
// (198.18.128.10:80) when it had endpoints 198.19.0.1 and 198.19.0.9;
// newProxier makes Proxiers on them.
func kubeProxyFakes(t *testing.T) (ipv *ipvstest.Fake, newProxier func(*proxier.Config) (*proxier.Proxier, error)) {
	t.Helper()
	ctx := context.Background()
	vip := netip.MustParseAddr("198.18.128.10")
	ipv, link := ipvstest.New(), dummytest.New()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ipv.AddService(ctx, ipvs.Service{Family: inet.IPv4, Protocol: ipvs.TCP, Addr: vip, Port: 80, Scheduler: "rr"}))
	for _, d := range []string{"198.19.0.1", "198.19.0.9"} {
		must(ipv.AddDestination(ctx, ipvs.ServiceKey{Protocol: ipvs.TCP, Addr: vip, Port: 80},
			ipvs.Destination{Addr: netip.MustParseAddr(d), Port: 8080, Forward: ipvs.Masq, Weight: 1}))
	}
	must(link.AddLinkAlias("kube-ipvs0", "dummy", ""))
	must(link.AddAddr("kube-ipvs0", netip.PrefixFrom(vip, 32)))
	rules := iptablestest.New(iptables.IPv4)
	return ipv, func(cfg *proxier.Config) (*proxier.Proxier, error) {
		return proxier.New(cfg, proxier.Deps{IPVS: ipv, Link: link, Sysctls: sysctltest.New(sysctltest.DefaultRelease),
			Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: rules}})
	}
}

func adoptingOptions(r *rig, newProxier func(*proxier.Config) (*proxier.Proxier, error), log *slog.Logger) Options {
	return Options{Config: testConfig(), NodeName: testNode, Client: r.c, NewProxier: newProxier, Logger: log,
		Proxier:       proxier.Config{KubeProxyNames: true, AdoptKubeProxy: true, Backend: proxier.IPTables},
		NodeAddresses: func() ([]netip.Addr, error) { return []netip.Addr{nodeIP}, nil }}
}

// The dry run (ipvskit-proxy --adopt-kube-proxy --dry-run) converts what
// the API server holds and previews the take-over, changing nothing; the
// agent that then adopts logs the same changes, a line each, sets the
// metric of their count, and makes them.
func TestAgentPreviewsAndLogsTheTakeover(t *testing.T) {
	srv := apiservertest.Start(t)
	r := &rig{srv: srv, c: srv.Client(), woken: make(chan struct{}, 1), ctx: context.Background()}
	r.createNode(t, nodeIP)
	r.create(t, service("web", "198.18.128.10"), slice("web", "node-b", "198.19.0.1"))
	ipv, newProxier := kubeProxyFakes(t)
	before := ipv.Dump()

	dry, err := New(adoptingOptions(r, newProxier, slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := dry.PreviewTakeover(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The API server's own Service is new to the node (kube-proxy never
	// served it here); web's endpoint that left goes to weight 0.
	want := []proxier.TakeoverChange{
		{ServiceID: "default/kubernetes:https", Frontend: "ClusterIP https", Object: "virtual server tcp 198.18.128.1:443", Change: "added (0 destinations)"},
		{ServiceID: "default/kubernetes:https", Object: "VIP 198.18.128.1", Change: "bound"},
		{ServiceID: "default/web:http", Frontend: "ClusterIP http", Object: "destination 198.19.0.9:8080 of tcp 198.18.128.10:80", Change: "weight 1 -> 0 (no new connections)"},
	}
	if diff := cmp.Diff(want, tp.Changes); diff != "" {
		t.Errorf("preview (-want +got):\n%s", diff)
	}
	if got := ipv.Dump(); got != before {
		t.Errorf("the dry run changed IPVS:\n%s\nwas\n%s", got, before)
	}

	var logs lockedBuffer
	r.ipvs = ipv
	r.start(t, adoptingOptions(r, newProxier, slog.New(slog.NewTextHandler(&logs, nil))))
	r.until(t, "198.19.0.9 at weight 0", func() bool {
		return slices.Equal(r.dests("198.18.128.10", 80), []string{"198.19.0.1:8080/1", "198.19.0.9:8080/0"})
	})
	line := `msg="take-over change" service=default/web:http frontend="ClusterIP http" object="destination 198.19.0.9:8080 of tcp 198.18.128.10:80" change="weight 1 -> 0 (no new connections)"`
	if !strings.Contains(logs.String(), line) {
		t.Errorf("the adopting agent's log lacks\n%s\nlog:\n%s", line, logs.String())
	}
	metric := `
# HELP ipvskit_takeover_changes Changes the take-over of a kube-proxy node makes to what kube-proxy programmed, as previewed before the adopting sync (0: no blip).
# TYPE ipvskit_takeover_changes gauge
ipvskit_takeover_changes 3
`
	if err := testutil.GatherAndCompare(r.a.rep.registry, strings.NewReader(metric), "ipvskit_takeover_changes"); err != nil {
		t.Error(err)
	}
}
