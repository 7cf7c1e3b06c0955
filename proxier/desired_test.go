package proxier

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/iptables"
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
	for _, d := range vs.dests {
		k := d.Key()
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
	names := func(ds destSet) []string {
		var out []string
		for _, d := range ds { // sorted by key
			out = append(out, d.Key().String())
		}
		return out
	}
	if got := names(chooseEndpoints(svc, pt, Cluster, IPv4, nil)); !slices.Equal(got, []string{"198.18.1.5:8080"}) {
		t.Errorf("cluster with a ready endpoint: %v", got)
	}
	if got := names(chooseEndpoints(svc, pt, Local, IPv4, nil)); !slices.Equal(got, []string{"198.18.1.2:8080"}) {
		t.Errorf("local without a local ready endpoint: %v", got)
	}
	svc.Endpoints[4].Ready = false
	if got := names(chooseEndpoints(svc, pt, Cluster, IPv4, nil)); !slices.Equal(got, []string{"198.18.1.1:8080", "198.18.1.2:8080"}) {
		t.Errorf("cluster without ready endpoints: %v", got)
	}
	svc.Endpoints[1].Local = false
	if got := chooseEndpoints(svc, pt, Local, IPv4, nil); len(got) != 0 {
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

// A single-stack Service's node port and health-check port are served only
// in its family (kube-proxy's proxier of the other family never sees it); a
// Service without cluster IPs serves them in every family.
func TestNodePortsFollowTheServicesFamilies(t *testing.T) {
	s := State{
		Node: Node{Addresses: []netip.Addr{a("198.18.0.10"), a("2001:db8::10")}},
		Services: map[string]Service{
			"v4": {ClusterIPs: []netip.Addr{a("198.18.100.1")}, Ports: []Port{{Name: "p", Protocol: TCP, Port: 80, NodePort: 30080}},
				ExternalTrafficPolicy: Local, HealthCheckNodePort: 30500},
			"v6":   {ClusterIPs: []netip.Addr{a("2001:db8:100::1")}, Ports: []Port{{Name: "p", Protocol: SCTP, Port: 80, NodePort: 30081}}},
			"none": {Ports: []Port{{Name: "p", Protocol: UDP, Port: 80, NodePort: 30082}}},
		},
	}
	d := compute(&s, dualStack)
	for k, want := range map[ipvs.ServiceKey]bool{
		key(ipvs.TCP, "198.18.0.10", 30080): true, key(ipvs.TCP, "2001:db8::10", 30080): false,
		key(ipvs.SCTP, "198.18.0.10", 30081): false, key(ipvs.SCTP, "2001:db8::10", 30081): true,
		key(ipvs.UDP, "198.18.0.10", 30082): true, key(ipvs.UDP, "2001:db8::10", 30082): true,
	} {
		if _, got := d.servers[k]; got != want {
			t.Errorf("%v: virtual server made %v, want %v", k, got, want)
		}
	}
	v4, v6 := d.rules[IPv4], d.rules[IPv6]
	if v4.Len(iptables.HealthCheckNodePort) != 1 || v6.Len(iptables.HealthCheckNodePort) != 0 {
		t.Errorf("health-check port entries: IPv4 %d, IPv6 %d; want 1, 0", v4.Len(iptables.HealthCheckNodePort), v6.Len(iptables.HealthCheckNodePort))
	}
	if v4.Len(iptables.NodePortTCP) != 1 || v6.Len(iptables.NodePortTCP) != 0 || v4.Len(iptables.NodePortSCTP) != 0 || v6.Len(iptables.NodePortSCTP) != 1 {
		t.Errorf("node-port entries: TCP %d/%d, SCTP %d/%d; want 1/0, 0/1",
			v4.Len(iptables.NodePortTCP), v6.Len(iptables.NodePortTCP), v4.Len(iptables.NodePortSCTP), v6.Len(iptables.NodePortSCTP))
	}
}

func TestAffinityTimeoutIsKept(t *testing.T) {
	svc := &Service{SessionAffinity: &SessionAffinity{Timeout: 60 * time.Second}}
	if v := virtualService(svc, UDP, a("198.18.0.1"), 53); v.Persistence.Timeout != time.Minute || v.Protocol != ipvs.UDP || v.Family != ipvs.IPv4 {
		t.Errorf("%+v", v)
	}
}

// TestLocalPolicyWithoutLocalEndpointHasNoFallback holds the decision of
// issue 29 (docs/kube-proxy-differences.md): a virtual server whose policy
// is Local gets no destinations when the node has no local endpoint, for
// the cluster IP too when the service is reachable from outside, where
// kube-proxy's IPVS mode falls back to the cluster endpoints.
func TestLocalPolicyWithoutLocalEndpointHasNoFallback(t *testing.T) {
	both := []string{"198.18.1.1:8080", "198.18.1.2:8080"}
	for _, c := range []struct{ internal, external TrafficPolicy }{{Cluster, Cluster}, {Local, Cluster}, {Cluster, Local}, {Local, Local}} {
		s := State{
			Node: Node{Addresses: []netip.Addr{a("198.18.0.10")}},
			Services: map[string]Service{"web": {
				ClusterIPs:            []netip.Addr{a("198.18.100.1")},
				ExternalIPs:           []netip.Addr{a("198.18.200.1")},
				LoadBalancerIPs:       []netip.Addr{a("198.18.201.1")},
				Ports:                 []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080, NodePort: 30080}},
				InternalTrafficPolicy: c.internal,
				ExternalTrafficPolicy: c.external,
				Endpoints:             []Endpoint{{Addr: a("198.18.1.1"), Ready: true}, {Addr: a("198.18.1.2"), Ready: true}},
			}},
		}
		want := func(p TrafficPolicy) []string {
			if p == Local {
				return nil
			}
			return both
		}
		d := compute(&s, &Config{Families: []Family{IPv4}})
		for k, w := range map[ipvs.ServiceKey][]string{
			key(ipvs.TCP, "198.18.100.1", 80):   want(c.internal),
			key(ipvs.TCP, "198.18.200.1", 80):   want(c.external),
			key(ipvs.TCP, "198.18.201.1", 80):   want(c.external),
			key(ipvs.TCP, "198.18.0.10", 30080): want(c.external),
		} {
			vs := d.servers[k]
			if vs == nil {
				t.Errorf("internal %v, external %v: no virtual server %v", c.internal, c.external, k)
			} else if got := dests(vs); !slices.Equal(got, w) {
				t.Errorf("internal %v, external %v: %v destinations %v, want %v", c.internal, c.external, k, got, w)
			}
		}
	}
}
