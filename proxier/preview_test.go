package proxier

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// kubeProxySets is a rules fake that reads back kube-proxy's ipsets
// (setReader), as the iptables back end does while adopting.
type kubeProxySets struct {
	*iptablestest.Fake
	sets *iptables.Ruleset
}

func (k kubeProxySets) SetMembers(context.Context) (*iptables.Ruleset, error) { return k.sets, nil }

// kubeProxyNode is a node as kube-proxy leaves it: the virtual servers and
// ipsets a Proxier with kube-proxy's names made for s, whose ledger is
// then thrown away, and an unmarked kube-ipvs0 holding vips. The Deps'
// rules read those ipsets back.
func kubeProxyNode(t *testing.T, s State, vips ...string) (Deps, *ipvstest.Fake, *dummytest.Fake) {
	t.Helper()
	ipv, rules := ipvstest.New(), iptablestest.New(iptables.IPv4)
	first, err := New(&Config{KubeProxyNames: true}, Deps{IPVS: ipv, Link: dummytest.New(), Sysctls: sysctltest.New(""),
		Rules: map[Family]Rules{IPv4: rules}})
	must(t, err)
	_, err = first.Sync(context.Background(), &s)
	must(t, err)
	sets := iptables.NewRuleset(iptables.IPv4, iptables.Options{})
	for _, set := range iptables.Sets() {
		if set.IPSetName(iptables.IPv4) != "" && set != iptables.VirtualServers {
			sets.Add(set, rules.Ruleset().Members(set)...)
		}
	}
	link := dummytest.New()
	must(t, link.AddLinkAlias("kube-ipvs0", "dummy", ""))
	for _, v := range vips {
		must(t, link.AddAddr("kube-ipvs0", netip.MustParsePrefix(v+"/32")))
	}
	return Deps{IPVS: ipv, Link: link, Sysctls: sysctltest.New(""),
		Rules: map[Family]Rules{IPv4: kubeProxySets{iptablestest.New(iptables.IPv4), sets}}}, ipv, link
}

func previewStates() (kube, ours State) {
	web := Service{
		ClusterIPs: []netip.Addr{a("198.18.100.1")},
		Ports:      []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080}},
		Endpoints:  []Endpoint{{Addr: a("198.18.1.1"), Ready: true}, {Addr: a("198.18.1.2"), Ready: true}},
	}
	dns := Service{
		ClusterIPs: []netip.Addr{a("198.18.100.2")},
		Ports:      []Port{{Name: "dns", Protocol: UDP, Port: 53}},
		Endpoints:  []Endpoint{{Addr: a("198.18.2.1"), Ready: true}, {Addr: a("198.18.2.2"), Ready: true}},
	}
	gone := Service{
		ClusterIPs: []netip.Addr{a("198.18.100.9")},
		Ports:      []Port{{Protocol: TCP, Port: 80}},
		Endpoints:  []Endpoint{{Addr: a("198.18.9.1"), Ready: true}},
	}
	kube = State{Services: map[string]Service{"default/web": web, "kube-system/dns": dns, "default/gone": gone}}

	web2, dns2 := web, dns
	web2.Endpoints = web.Endpoints[1:] // 198.18.1.1 leaves: weight 0
	web2.SessionAffinity = &SessionAffinity{Timeout: time.Hour}
	dns2.Endpoints = dns.Endpoints[:1] // a UDP destination goes at once
	added := Service{
		ClusterIPs: []netip.Addr{a("198.18.100.3")},
		Ports:      []Port{{Name: "https", Protocol: TCP, Port: 443}},
		Endpoints:  []Endpoint{{Addr: a("198.18.3.1"), Ready: true}},
	}
	ours = State{Services: map[string]Service{"default/web": web2, "kube-system/dns": dns2, "default/added": added,
		"default/same": {ClusterIPs: []netip.Addr{a("198.18.100.4")}, Ports: []Port{{Protocol: TCP, Port: 80}}}}}
	kube.Services["default/same"] = ours.Services["default/same"]
	return kube, ours
}

// PreviewTakeover reads kube-proxy's objects back and lists, per Service,
// every change the adopting Sync then makes, and changes nothing: IPVS,
// the link's addresses and its (missing) mark stay as kube-proxy left
// them. The Sync that follows makes exactly those changes.
func TestPreviewTakeoverListsEveryChangePerServiceAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	kube, ours := previewStates()
	deps, ipv, link := kubeProxyNode(t, kube, "198.18.100.1", "198.18.100.2", "198.18.100.4", "198.18.100.9")
	before, addrsBefore := ipv.Dump(), link.Dump()
	p, err := New(&Config{KubeProxyNames: true, AdoptKubeProxy: true}, deps)
	must(t, err)

	tp, err := p.PreviewTakeover(ctx, &ours)
	must(t, err)
	want := []TakeoverChange{
		{ServiceID: "default/added", Frontend: "ClusterIP https", Object: "virtual server tcp 198.18.100.3:443", Change: "added (1 destination)"},
		{ServiceID: "default/added", Frontend: "ClusterIP https", Object: "destination 198.18.3.1:443 of tcp 198.18.100.3:443", Change: "added (weight 1)"},
		{ServiceID: "default/added", Object: "VIP 198.18.100.3", Change: "bound"},
		{ServiceID: "default/added", Frontend: "ClusterIP https", Object: "ipset KUBE-CLUSTER-IP member 198.18.100.3,tcp:443", Change: "added"},
		{ServiceID: "default/added", Object: "ipset KUBE-IPVS-IPS member 198.18.100.3", Change: "added"},
		{ServiceID: "default/web", Frontend: "ClusterIP http", Object: "virtual server tcp 198.18.100.1:80", Change: "persistence 0s -> 1h0m0s"},
		{ServiceID: "default/web", Frontend: "ClusterIP http", Object: "destination 198.18.1.1:8080 of tcp 198.18.100.1:80", Change: "weight 1 -> 0 (no new connections)"},
		{ServiceID: "kube-system/dns", Frontend: "ClusterIP dns", Object: "destination 198.18.2.2:53 of udp 198.18.100.2:53", Change: "deleted"},
		{Object: "virtual server tcp 198.18.100.9:80", Change: "deleted (with 1 destination)"},
		{Object: "VIP 198.18.100.9", Change: "unbound"},
		{Object: "ipset KUBE-CLUSTER-IP member 198.18.100.9,tcp:80", Change: "deleted"},
		{Object: "ipset KUBE-IPVS-IPS member 198.18.100.9", Change: "deleted"},
	}
	if diff := cmp.Diff(want, tp.Changes); diff != "" {
		t.Errorf("Changes (-want +got):\n%s\n%s", diff, tp)
	}
	if got, want := tp.Services(), []string{"default/added", "default/web", "kube-system/dns"}; !cmp.Equal(got, want) {
		t.Errorf("Services() = %v, want %v", got, want)
	}
	if ipv.Dump() != before || link.Dump() != addrsBefore {
		t.Errorf("the preview changed the kernel:\n%s\n%s", ipv.Dump(), link.Dump())
	}
	if _, err := deps.Link.Ensure(ctx, "kube-ipvs0"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("kube-ipvs0 after the preview: Ensure = %v, want it still kube-proxy's (unmarked)", err)
	}
	if rs := deps.Rules[IPv4].(kubeProxySets).Ruleset(); rs != nil {
		t.Errorf("the preview applied rules: %v", rs)
	}

	res, err := p.Sync(ctx, &ours)
	must(t, err)
	// 1 service update + 1 destination update + 1 service add + 1
	// destination add; 1 destination and 1 service deleted.
	if res.Plan.IPVSAdd.Len() != 4 || res.Plan.IPVSDelete.Len() != 2 || !slices.Equal(res.Plan.Bind, []netip.Addr{a("198.18.100.3")}) ||
		!slices.Equal(res.Plan.Unbind, []netip.Addr{a("198.18.100.9")}) {
		t.Errorf("the Sync after the preview did other than the preview said:\n%s", res.Plan)
	}
	if _, err := p.PreviewTakeover(ctx, &ours); err == nil {
		t.Error("PreviewTakeover after the take-over: no error")
	}
}

// A take-over that changes nothing previews as empty: the no-blip case.
func TestPreviewTakeoverOfAnUnchangedNodeIsEmpty(t *testing.T) {
	s := oneService()
	deps, _, _ := kubeProxyNode(t, s, "198.18.100.1")
	p, err := New(&Config{KubeProxyNames: true, AdoptKubeProxy: true}, deps)
	must(t, err)
	tp, err := p.PreviewTakeover(context.Background(), &s)
	must(t, err)
	if !tp.Empty() {
		t.Errorf("preview of an unchanged node:\n%s", tp)
	}
	want := "take-over preview: no change to what kube-proxy programmed (no blip)\n" +
		"rewritten, same meaning:\n" +
		"  IPv4: kube-proxy's chains and jump rules replaced by marked equivalents, its ipsets rewritten (member changes above), ledger ipset KUBE-VIRTUAL-SERVERS added\n" +
		"  link kube-ipvs0: marked as the Proxier's (its addresses and flags stay)\n"
	if got := tp.String(); got != want {
		t.Errorf("String:\n%s\nwant\n%s", got, want)
	}
}

// Without adoption there is nothing to preview; an invalid State is
// refused as Sync refuses it.
func TestPreviewTakeoverRefusals(t *testing.T) {
	deps, _, _ := kubeProxyNode(t, oneService())
	p, err := New(&Config{KubeProxyNames: true}, deps)
	must(t, err)
	s := oneService()
	if _, err := p.PreviewTakeover(context.Background(), &s); err == nil {
		t.Error("PreviewTakeover without AdoptKubeProxy: no error")
	}
	p, err = New(&Config{KubeProxyNames: true, AdoptKubeProxy: true}, deps)
	must(t, err)
	if _, err := p.PreviewTakeover(context.Background(), nil); err == nil {
		t.Error("PreviewTakeover of a nil State: no error")
	}
	bad := State{Services: map[string]Service{"x": {ClusterIPs: []netip.Addr{{}}}}}
	var ve *ValidationError
	if _, err := p.PreviewTakeover(context.Background(), &bad); !errors.As(err, &ve) {
		t.Errorf("PreviewTakeover of an invalid State: %v, want a *ValidationError", err)
	}
}

// In VIPLocalRoutes the take-over holds each VIP kube-proxy bound as an
// address by a local route instead, and unbinds those no Service needs:
// the preview says so (a route-mode take-over is not blip-free, see
// docs/vip-modes.md) and changes nothing on the link.
func TestPreviewTakeoverInRouteMode(t *testing.T) {
	w := newVIPWorld()
	must(t, w.link.AddLinkAlias("kube-ipvs0", "dummy", ""))
	must(t, w.link.AddAddr("kube-ipvs0", netip.MustParsePrefix("198.18.100.1/32")))
	must(t, w.link.AddAddr("kube-ipvs0", netip.MustParsePrefix("198.18.100.7/32")))
	p := w.proxier(t, Config{KubeProxyNames: true, AdoptKubeProxy: true, VIPMode: VIPLocalRoutes})
	tp, err := p.PreviewTakeover(context.Background(), ptr(oneService()))
	must(t, err)
	web := "ClusterIP http"
	want := []TakeoverChange{
		{ServiceID: "web", Frontend: web, Object: "virtual server tcp 198.18.100.1:80", Change: "added (2 destinations)"},
		{ServiceID: "web", Frontend: web, Object: "destination 198.18.1.1:8080 of tcp 198.18.100.1:80", Change: "added (weight 1)"},
		{ServiceID: "web", Frontend: web, Object: "destination 198.18.1.2:8080 of tcp 198.18.100.1:80", Change: "added (weight 1)"},
		{ServiceID: "web", Object: "VIP 198.18.100.1", Change: "held by a local route instead of an address"},
		{Object: "VIP 198.18.100.7", Change: "unbound"},
	}
	if diff := cmp.Diff(want, tp.Changes); diff != "" {
		t.Errorf("Changes (-want +got):\n%s\n%s", diff, tp)
	}
	if len(w.link.ops) != 0 {
		t.Errorf("the preview changed the link: %v", w.link.ops)
	}
}
