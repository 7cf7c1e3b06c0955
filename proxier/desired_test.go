package proxier

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
)

func key(proto ipvs.Protocol, addr string, port uint16) ipvs.ServiceKey {
	ad := a(addr)
	f := ipvs.IPv4
	if ad.Is6() {
		f = ipvs.IPv6
	}
	return ipvs.ServiceKey{Family: f, Protocol: proto, Addr: ad, Port: port}
}

func dests(vs *virtualServer) []string {
	var out []string
	for k, d := range vs.dests {
		if d.Weight != 1 || d.Forward != ipvs.Masq {
			out = append(out, "bad:"+k.String())
			continue
		}
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}

func TestComputeMakesAVirtualServerPerFrontend(t *testing.T) {
	s := validState()
	d := compute(&s, dualStack)

	want := map[ipvs.ServiceKey][]string{
		// web/http: cluster IPs use the internal policy (Cluster): the Ready
		// endpoint only (the other is terminating), with its named port.
		key(ipvs.TCP, "198.18.100.1", 80): {"198.18.1.1:8081"},
		// Endpoints are chosen per family: no IPv6 endpoint is Ready, so the
		// Serving and Terminating one is used.
		key(ipvs.TCP, "2001:db8:100::1", 80): {"[2001:db8:1::1]:8080"},
		// external IP, LB IP and node ports use the external policy (Local): the local Ready one.
		key(ipvs.TCP, "198.18.200.1", 80):    {"198.18.1.1:8081"},
		key(ipvs.TCP, "198.18.201.1", 80):    {"198.18.1.1:8081"},
		key(ipvs.TCP, "198.18.0.10", 30080):  {"198.18.1.1:8081"},
		key(ipvs.TCP, "2001:db8::10", 30080): nil,
		// web/dns: no named endpoint port, no target port: the service port.
		key(ipvs.UDP, "198.18.100.1", 53):    {"198.18.1.1:53"},
		key(ipvs.UDP, "2001:db8:100::1", 53): {"[2001:db8:1::1]:53"},
		key(ipvs.UDP, "198.18.200.1", 53):    {"198.18.1.1:53"},
		key(ipvs.UDP, "198.18.201.1", 53):    {"198.18.1.1:53"},
		// db: no endpoints at all.
		key(ipvs.SCTP, "198.18.100.2", 5432): nil,
	}
	if len(d.servers) != len(want) {
		var got []string
		for k := range d.servers {
			got = append(got, k.String())
		}
		t.Fatalf("%d virtual servers, want %d: %v", len(d.servers), len(want), got)
	}
	for k, w := range want {
		vs := d.servers[k]
		if vs == nil {
			t.Errorf("no virtual server %v", k)
			continue
		}
		if got := dests(vs); !slices.Equal(got, w) {
			t.Errorf("%v destinations %v, want %v", k, got, w)
		}
	}
	web := d.servers[key(ipvs.TCP, "198.18.100.1", 80)].svc
	if web.Scheduler != "mh" || web.SchedFlags != ipvs.MHFallback|ipvs.MHPort || web.Persistence.Timeout != DefaultAffinityTimeout {
		t.Errorf("web's virtual server: %+v", web)
	}
	if db := d.servers[key(ipvs.SCTP, "198.18.100.2", 5432)].svc; db.Scheduler != "rr" || db.Persistence.Timeout != 0 {
		t.Errorf("db's virtual server: %+v", db)
	}
	var vips []string
	for v := range d.vips {
		vips = append(vips, v.String())
	}
	slices.Sort(vips)
	// Cluster, external and LB IPs are bound; node addresses never.
	if w := []string{"198.18.100.1", "198.18.100.2", "198.18.200.1", "198.18.201.1", "2001:db8:100::1"}; !slices.Equal(vips, w) {
		t.Errorf("vips %v, want %v", vips, w)
	}
}

func TestChooseEndpointsFallsBackToServingTerminating(t *testing.T) {
	pt := Port{Name: "p", Protocol: TCP, Port: 80, TargetPort: 8080}
	svc := &Service{Endpoints: []Endpoint{
		{Addr: a("198.18.1.1"), Serving: true, Terminating: true},
		{Addr: a("198.18.1.2"), Serving: true, Terminating: true, Local: true},
		{Addr: a("198.18.1.3")},                                             // neither ready nor serving: never used
		{Addr: a("198.18.1.4"), Serving: true},                              // serving, not terminating, not ready: never used
		{Addr: a("198.18.1.5"), Ready: true, Ports: map[string]int{"q": 9}}, // ready
	}}
	names := func(ds map[ipvs.DestinationKey]ipvs.Destination) []string {
		var out []string
		for _, k := range sortedDestKeys(ds) {
			out = append(out, k.String())
		}
		return out
	}
	if got := names(chooseEndpoints(svc, pt, Cluster, IPv4)); !slices.Equal(got, []string{"198.18.1.5:8080"}) {
		t.Errorf("cluster with a ready endpoint: %v", got)
	}
	if got := names(chooseEndpoints(svc, pt, Local, IPv4)); !slices.Equal(got, []string{"198.18.1.2:8080"}) {
		t.Errorf("local without a local ready endpoint: %v", got)
	}
	svc.Endpoints[4].Ready = false
	if got := names(chooseEndpoints(svc, pt, Cluster, IPv4)); !slices.Equal(got, []string{"198.18.1.1:8080", "198.18.1.2:8080"}) {
		t.Errorf("cluster without ready endpoints: %v", got)
	}
	svc.Endpoints[1].Local = false
	if got := chooseEndpoints(svc, pt, Local, IPv4); len(got) != 0 {
		t.Errorf("local with no local endpoints must have none, got %v", names(got))
	}
}

func TestNodePortAddrsFollowCIDRsAndFamilies(t *testing.T) {
	n := &Node{
		Addresses:     []netip.Addr{a("198.18.0.12"), a("198.18.9.1"), a("2001:db8::10"), a("127.0.0.1"), a("fe80::1"), a("198.18.0.11")},
		NodePortCIDRs: []netip.Prefix{pfx("198.18.0.0/24"), pfx("2001:db8::/64")},
	}
	got := nodePortAddrs(n, map[Family]bool{IPv4: true})
	if w := []netip.Addr{a("198.18.0.11"), a("198.18.0.12")}; !slices.Equal(got, w) {
		t.Errorf("got %v, want %v", got, w)
	}
	n.NodePortCIDRs = nil
	got = nodePortAddrs(n, map[Family]bool{IPv4: true, IPv6: true})
	if w := []netip.Addr{a("198.18.0.11"), a("198.18.0.12"), a("198.18.9.1"), a("2001:db8::10")}; !slices.Equal(got, w) {
		t.Errorf("got %v, want %v", got, w)
	}
}

func TestAffinityTimeoutIsKept(t *testing.T) {
	svc := &Service{SessionAffinity: &SessionAffinity{Timeout: 60 * time.Second}}
	if v := virtualService(svc, UDP, a("198.18.0.1"), 53); v.Persistence.Timeout != time.Minute || v.Protocol != ipvs.UDP || v.Family != ipvs.IPv4 {
		t.Errorf("%+v", v)
	}
}
