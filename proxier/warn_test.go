package proxier_test

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
)

// web is a service with a cluster IP of each family in ips and the ready
// endpoints eps.
func web(ips []string, ports []proxier.Port, endpoints ...string) proxier.Service {
	s := proxier.Service{Ports: ports}
	for _, a := range ips {
		s.ClusterIPs = append(s.ClusterIPs, addr(a))
	}
	for _, a := range endpoints {
		s.Endpoints = append(s.Endpoints, proxier.Endpoint{Addr: addr(a), Ready: true})
	}
	return s
}

func TestWarningsNameWhatTheStateAsksForInVain(t *testing.T) {
	v4node := proxier.Node{Addresses: []netip.Addr{addr("198.18.0.10")}}
	for _, c := range []struct {
		name string
		node proxier.Node
		svc  proxier.Service
		want []proxier.Warning
	}{{
		name: "IPv6EndpointOfAnIPv4Service", node: node,
		svc: web([]string{"198.18.100.1"}, []proxier.Port{http}, "198.18.11.2", "2001:db8:11::2"),
		want: []proxier.Warning{{Path: `services["web"].endpoints[1].addr`, Value: "2001:db8:11::2",
			Msg: "is unused: the service has no IPv6 frontend (cluster, external or load-balancer IP, or node port)"}},
	}, {
		name: "FixedByAnIPv6ClusterIP", node: node,
		svc: web([]string{"198.18.100.1", "2001:db8:100::1"}, []proxier.Port{http}, "198.18.11.2", "2001:db8:11::2"),
	}, {
		name: "FixedByAnIPv6ExternalIP", node: node,
		svc: func() proxier.Service {
			s := web([]string{"198.18.100.1"}, []proxier.Port{http}, "198.18.11.2", "2001:db8:11::2")
			s.ExternalIPs = []netip.Addr{addr("2001:db8:102::1")}
			return s
		}(),
	}, {
		name: "NodePortOnANodeWithoutAddresses", node: proxier.Node{},
		svc: web([]string{"198.18.100.1"}, []proxier.Port{withNodePort(http, 30080)}, "198.18.11.2"),
		want: []proxier.Warning{{Path: `services["web"].ports[0].nodePort`, Value: "30080",
			Msg: "is not served over IPv4: the node has no IPv4 address (of Node.Addresses, in NodePortCIDRs if set, outside Config.ExcludeCIDRs)"}},
	}, {
		name: "NodePortOnANodeWithAnAddress", node: v4node,
		svc: web([]string{"198.18.100.1"}, []proxier.Port{withNodePort(http, 30080)}, "198.18.11.2"),
	}, {
		name: "DualStackNodePortOnAnIPv4Node", node: v4node,
		svc: web([]string{"198.18.100.1", "2001:db8:100::1"}, []proxier.Port{withNodePort(http, 30080)}, "198.18.11.2", "2001:db8:11::2"),
		want: []proxier.Warning{{Path: `services["web"].ports[0].nodePort`, Value: "30080",
			Msg: "is not served over IPv6: the node has no IPv6 address (of Node.Addresses, in NodePortCIDRs if set, outside Config.ExcludeCIDRs)"}},
	}, {
		name: "NodePortOnlyServiceOnANodeWithoutAddresses", node: proxier.Node{},
		svc: web(nil, []proxier.Port{withNodePort(http, 30080)}, "198.18.11.2"),
		want: []proxier.Warning{
			{Path: `services["web"].ports[0].nodePort`, Value: "30080", Msg: "is not served over IPv4: the node has no IPv4 address (of Node.Addresses, in NodePortCIDRs if set, outside Config.ExcludeCIDRs)"},
			{Path: `services["web"].ports[0].nodePort`, Value: "30080", Msg: "is not served over IPv6: the node has no IPv6 address (of Node.Addresses, in NodePortCIDRs if set, outside Config.ExcludeCIDRs)"},
			{Path: `services["web"].endpoints`, Msg: "are unused: the service has no frontend (no cluster, external or load-balancer IP, and no node port served)"},
		},
	}, {
		name: "NodePortOnlyServiceOnAnIPv4Node", node: v4node,
		svc: web(nil, []proxier.Port{withNodePort(http, 30080)}, "198.18.11.2", "2001:db8:11::2"),
		want: []proxier.Warning{
			{Path: `services["web"].ports[0].nodePort`, Value: "30080", Msg: "is not served over IPv6: the node has no IPv6 address (of Node.Addresses, in NodePortCIDRs if set, outside Config.ExcludeCIDRs)"},
			{Path: `services["web"].endpoints[1].addr`, Value: "2001:db8:11::2", Msg: "is unused: the service has no IPv6 frontend (cluster, external or load-balancer IP, or node port)"},
		},
	}, {
		// Issue 21, item 1: IPFamilies narrows what a service without a
		// cluster IP serves; an endpoint of another family is unused.
		name: "IPv4EndpointOfAnIPv6OnlyNodePortService", node: node,
		svc: func() proxier.Service {
			s := web(nil, []proxier.Port{withNodePort(http, 30080)}, "198.18.11.2", "2001:db8:11::2")
			s.IPFamilies = []proxier.Family{proxier.IPv6}
			return s
		}(),
		want: []proxier.Warning{{Path: `services["web"].endpoints[0].addr`, Value: "198.18.11.2",
			Msg: "is unused: the service is not served in IPv4 (ipFamilies)"}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			var ev *proxier.SyncEvent
			cfg := dualStack
			cfg.Observer = proxier.ObserverFunc(func(e proxier.Event) { ev, _ = e.(*proxier.SyncEvent) })
			p, err := proxier.New(&cfg, w.deps())
			must(t, err)
			s := proxier.State{Node: c.node, Services: map[string]proxier.Service{"web": c.svc}}
			res, err := p.Sync(context.Background(), &s)
			must(t, err)
			if !reflect.DeepEqual(res.Warnings, c.want) {
				t.Errorf("Result.Warnings:\n got %q\nwant %q", res.Warnings, c.want)
			}
			if ev == nil || !reflect.DeepEqual(ev.Warnings, c.want) {
				t.Errorf("SyncEvent.Warnings: %+v, want %q", ev, c.want)
			}
		})
	}
}

func TestPortNamesThatAreNotDNSLabelsAreRefused(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, name := range []string{"my port", "a\nb", "Http", "-http", "http-", "http_2", long} {
		t.Run(name, func(t *testing.T) {
			pt := http
			pt.Name = name
			svc := web([]string{"198.18.100.1"}, []proxier.Port{pt}, "198.18.11.2")
			s := proxier.State{Services: map[string]proxier.Service{"web": svc}}
			wantProblem(t, s.Validate(&dualStack), `services["web"].ports[0].name`)

			// As an endpoint's port name: refused for itself.
			svc = web([]string{"198.18.100.1"}, []proxier.Port{http}, "198.18.11.2")
			svc.Endpoints[0].Ports = map[string]int{name: 8080}
			s.Services["web"] = svc
			wantProblem(t, s.Validate(&dualStack), `services["web"].endpoints[0].ports[`+strconv.Quote(name)+`]`)
		})
	}
	for _, name := range []string{"http", "http-2", "9090", strings.Repeat("a", 63)} {
		pt := http
		pt.Name = name
		svc := web([]string{"198.18.100.1"}, []proxier.Port{pt}, "198.18.11.2")
		svc.Endpoints[0].Ports = map[string]int{name: 8080}
		s := proxier.State{Services: map[string]proxier.Service{"web": svc}}
		if err := s.Validate(&dualStack); err != nil {
			t.Errorf("port name %q: %v", name, err)
		}
	}
}

// wantProblem checks that err is a *ValidationError with a Problem at path
// that says the name is not a DNS label.
func wantProblem(t *testing.T, err error, path string) {
	t.Helper()
	var ve *proxier.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a *ValidationError at %s", err, path)
	}
	for _, p := range ve.Problems {
		if p.Path == path && strings.Contains(p.Msg, "is not a DNS label") {
			return
		}
	}
	t.Errorf("no DNS label problem at %s in:\n%v", path, err)
}

// records collects the log records of a slog.Logger.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// warned returns the paths of the Warn records about unused parts, and
// forgets every record.
func (r *records) warned() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		if rec.Level != slog.LevelWarn || rec.Message != "proxier: unused" {
			continue
		}
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "path" {
				out = append(out, a.Value.String())
			}
			return true
		})
	}
	r.recs = nil
	return out
}

// A warning is logged once, by the sync that first finds it, whether the
// State came whole (Sync) or service by service (Update); an Update reports
// the warnings of the services it was given, a Sync those of all.
func TestWarningsAreLoggedOnceAndUpdateReportsItsServices(t *testing.T) {
	ctx := context.Background()
	log := &records{}
	cfg := dualStack
	cfg.Logger = slog.New(log)
	p, err := proxier.New(&cfg, newWorld(t).deps())
	must(t, err)
	bad := web([]string{"198.18.100.1"}, []proxier.Port{http}, "198.18.11.2", "2001:db8:11::2")
	good := web([]string{"198.18.100.2"}, []proxier.Port{http}, "198.18.12.2")
	s := proxier.State{Node: node, Services: map[string]proxier.Service{"bad": bad, "good": good}}
	const path = `services["bad"].endpoints[1].addr`

	res, err := p.Sync(ctx, &s)
	must(t, err)
	if got := log.warned(); !reflect.DeepEqual(got, []string{path}) || len(res.Warnings) != 1 {
		t.Errorf("first Sync logged %q and reports %q, want the warning at %s", got, res.Warnings, path)
	}
	for range 2 {
		s2 := proxier.State{Node: node, Services: map[string]proxier.Service{"bad": bad, "good": good}}
		res, err = p.Sync(ctx, &s2)
		must(t, err)
		if got := log.warned(); len(got) != 0 {
			t.Errorf("a Sync of the same State logged %q again", got)
		}
		if len(res.Warnings) != 1 || res.Warnings[0].Path != path {
			t.Errorf("a Sync of the same State reports %q, want the warning at %s", res.Warnings, path)
		}
	}

	res, err = p.Update(ctx, map[string]*proxier.Service{"good": &good})
	must(t, err)
	if len(res.Warnings) != 0 || len(log.warned()) != 0 {
		t.Errorf("an Update of a service without warnings reports %q", res.Warnings)
	}
	res, err = p.Update(ctx, map[string]*proxier.Service{"bad": &bad})
	must(t, err)
	if len(res.Warnings) != 1 || res.Warnings[0].Path != path || len(log.warned()) != 0 {
		t.Errorf("an Update of the unchanged bad service reports %q (and must not log it again)", res.Warnings)
	}

	fixed := web([]string{"198.18.100.1"}, []proxier.Port{http}, "198.18.11.2")
	res, err = p.Update(ctx, map[string]*proxier.Service{"bad": &fixed})
	must(t, err)
	if len(res.Warnings) != 0 {
		t.Errorf("the fixed service reports %q", res.Warnings)
	}
	// Broken again: a new finding, logged again.
	res, err = p.Update(ctx, map[string]*proxier.Service{"bad": &bad})
	must(t, err)
	if got := log.warned(); len(res.Warnings) != 1 || !reflect.DeepEqual(got, []string{path}) {
		t.Errorf("broken again: reports %q, logged %q; want the warning at %s, logged once", res.Warnings, got, path)
	}
	// A Sync of the whole State reports every service's.
	res, err = p.Sync(ctx, &s)
	must(t, err)
	if len(res.Warnings) != 1 || res.Warnings[0].Path != path {
		t.Errorf("a whole-State Sync reports %q, want the warning at %s", res.Warnings, path)
	}
}
