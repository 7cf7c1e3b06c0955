package proxier

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables/iptablestest"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// fakeNode is a Proxier over the fakes of every kernel client, dual-stack.
type fakeNode struct {
	p     *Proxier
	ipvs  *ipvstest.Fake
	link  *dummytest.Fake
	rules map[Family]*iptablestest.Fake
	clk   *fakeClock
}

var dualStackNode = Node{Addresses: []netip.Addr{a("198.18.0.10"), a("2001:db8::10")}}

func newFakeNode(t testing.TB, mode ...VIPMode) *fakeNode {
	t.Helper()
	n := &fakeNode{ipvs: ipvstest.New(), link: dummytest.New(), clk: &fakeClock{t: t0},
		rules: map[Family]*iptablestest.Fake{IPv4: iptablestest.New(IPv4), IPv6: iptablestest.New(IPv6)}}
	cfg := &Config{Families: []Family{IPv4, IPv6}}
	if len(mode) > 0 {
		cfg.VIPMode = mode[0]
	}
	p, err := New(cfg, Deps{IPVS: n.ipvs, Link: n.link, Sysctls: sysctltest.New(""),
		Rules: map[Family]Rules{IPv4: n.rules[IPv4], IPv6: n.rules[IPv6]}})
	if err != nil {
		t.Fatal(err)
	}
	p.now = n.clk.now
	n.p = p
	return n
}

// kernel is everything the fakes hold, as text.
func (n *fakeNode) kernel(t testing.TB) string {
	t.Helper()
	addrs, err := n.link.Addrs(context.Background(), DefaultLinkName)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(n.ipvs.Dump())
	for _, p := range addrs {
		fmt.Fprintf(&b, "address %v\n", p)
	}
	routes, err := n.link.Routes(context.Background(), DefaultLinkName)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		fmt.Fprintf(&b, "route local %v\n", r)
	}
	b.WriteString(n.rules[IPv4].Dump())
	b.WriteString(n.rules[IPv6].Dump())
	return b.String()
}

// drainAll ends every drain (the fakes report no connections).
func (n *fakeNode) drainAll(t testing.TB) {
	t.Helper()
	n.clk.add(time.Hour)
	if _, err := n.p.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// genService is service i of the random walk: every field varies, the
// frontends are its own (port 1000+i, node ports 30000+, health check
// 32000+i), while external and load-balancer IPs and endpoints are shared
// between services, so the counts of VIPs and set members are exercised.
func genService(rng *rand.Rand, i int) Service {
	port := 1000 + i
	s := Service{ClusterIPs: []netip.Addr{netip.AddrFrom4([4]byte{198, 18, 100, byte(i)})}}
	if rng.IntN(3) == 0 {
		s.ClusterIPs = append(s.ClusterIPs, netip.MustParseAddr(fmt.Sprintf("2001:db8:100::%x", i)))
	}
	if rng.IntN(5) == 0 {
		s.ClusterIPs = s.ClusterIPs[1:] // IPv6 only, or headless-like
	}
	protos := []Protocol{TCP, UDP, SCTP}
	for j := range 1 + rng.IntN(2) {
		pt := Port{Name: fmt.Sprintf("p%d", j), Protocol: protos[(j+rng.IntN(3))%3], Port: port + 100*j, TargetPort: 8000 + rng.IntN(3)}
		if j == 1 && pt.Protocol == s.Ports[0].Protocol {
			pt.Protocol = protos[(slices.Index(protos, pt.Protocol)+1)%3]
		}
		if rng.IntN(3) == 0 {
			pt.NodePort = 30000 + 2*i + j
		}
		s.Ports = append(s.Ports, pt)
	}
	if rng.IntN(3) == 0 {
		s.ExternalIPs = []netip.Addr{netip.AddrFrom4([4]byte{198, 18, 102, byte(rng.IntN(3))})}
	}
	if rng.IntN(3) == 0 {
		s.LoadBalancerIPs = []netip.Addr{netip.AddrFrom4([4]byte{198, 18, 103, byte(rng.IntN(3))})}
		switch rng.IntN(3) {
		case 1:
			s.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("198.18.20.0/24")}
		case 2:
			s.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")} // admits the node
		}
	}
	if rng.IntN(3) == 0 {
		s.ExternalTrafficPolicy = Local
		if rng.IntN(2) == 0 {
			s.HealthCheckNodePort = 32000 + i
		}
	}
	if rng.IntN(4) == 0 {
		s.InternalTrafficPolicy = Local
	}
	if rng.IntN(4) == 0 {
		s.SessionAffinity = &SessionAffinity{Timeout: time.Duration(rng.IntN(3)) * time.Minute}
	}
	if rng.IntN(4) == 0 {
		s.Scheduler = "wrr"
	}
	for _, k := range rng.Perm(12)[:rng.IntN(5)] {
		e := Endpoint{Addr: netip.AddrFrom4([4]byte{198, 18, 1, byte(k)}), Ready: rng.IntN(4) != 0, Local: rng.IntN(2) == 0}
		if k >= 8 {
			e.Addr = netip.MustParseAddr(fmt.Sprintf("2001:db8:1::%x", k))
		}
		e.Serving, e.Terminating = e.Ready || rng.IntN(2) == 0, !e.Ready && rng.IntN(2) == 0
		if rng.IntN(3) == 0 {
			e.Ports = map[string]int{"p0": 9000 + rng.IntN(2)}
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	return s
}

// TestUpdateAndSyncMatchAFreshSync walks through random changes of a
// dual-stack State with every kind of frontend and holds the incremental
// paths to the full one: after each step, a Proxier fed by Update and one
// fed the whole State by Sync leave the kernel exactly as a new Proxier's
// first Sync of that State does (virtual servers and destinations, VIPs,
// every set of both families), and a change that is invalid against the
// services that stay is refused by both with nothing changed.
func TestUpdateAndSyncMatchAFreshSync(t *testing.T) {
	for _, mode := range []VIPMode{VIPAddresses, VIPLocalRoutes} {
		t.Run(mode.String(), func(t *testing.T) { testUpdateAndSyncMatchAFreshSync(t, mode) })
	}
}

func testUpdateAndSyncMatchAFreshSync(t *testing.T, mode VIPMode) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(19, 50000))
	byUpdate, bySync := newFakeNode(t, mode), newFakeNode(t, mode)
	st := State{Node: dualStackNode, Services: map[string]Service{}}
	if _, err := bySync.p.Sync(ctx, &st); err != nil {
		t.Fatal(err)
	}
	if _, err := byUpdate.p.Sync(ctx, &st); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for step := range 300 {
		changes := map[string]*Service{}
		for range 1 + rng.IntN(3) {
			i := rng.IntN(16)
			id := fmt.Sprintf("svc-%d", i)
			if rng.IntN(4) == 0 {
				changes[id] = nil
			} else {
				s := genService(rng, i)
				changes[id] = &s
			}
		}
		invalid := false
		if step%10 == 9 && len(st.Services) > 0 {
			// Take another service's frontend: refused against a
			// service that stays.
			ids := slices.Sorted(maps.Keys(st.Services))
			holder := ids[rng.IntN(len(ids))]
			if _, changing := changes[holder]; !changing && len(st.Services[holder].ClusterIPs) > 0 {
				thief := genService(rng, 99)
				thief.ClusterIPs, thief.Ports = st.Services[holder].ClusterIPs[:1], slices.Clone(st.Services[holder].Ports[:1])
				thief.Ports[0].NodePort = 0
				changes["thief"], invalid = &thief, true
			}
		}
		next := State{Node: st.Node, Services: cloneServices(st.Services)}
		for id, s := range changes {
			if s == nil {
				delete(next.Services, id)
			} else {
				next.Services[id] = cloneService(s)
			}
		}
		beforeU, beforeS := byUpdate.kernel(t), bySync.kernel(t)
		_, errU := byUpdate.p.Update(ctx, changes)
		_, errS := bySync.p.Sync(ctx, &next)
		var ve *ValidationError
		if invalid {
			if !errors.As(errU, &ve) || !errors.As(errS, &ve) {
				t.Fatalf("step %d: a frontend held by a service that stays: Update %v, Sync %v", step, errU, errS)
			}
			if !strings.Contains(errU.Error(), "is already served by services[") {
				t.Fatalf("step %d: Update: %v", step, errU)
			}
			if byUpdate.kernel(t) != beforeU || bySync.kernel(t) != beforeS {
				t.Fatalf("step %d: a refused change changed the kernel", step)
			}
			refused++
			continue
		}
		if errU != nil || errS != nil {
			t.Fatalf("step %d: Update %v, Sync %v", step, errU, errS)
		}
		st = next
		byUpdate.drainAll(t)
		bySync.drainAll(t)
		fresh := newFakeNode(t, mode)
		if _, err := fresh.p.Sync(ctx, &st); err != nil {
			t.Fatalf("step %d: fresh sync: %v", step, err)
		}
		want := fresh.kernel(t)
		if got := byUpdate.kernel(t); got != want {
			t.Fatalf("step %d: after Update the kernel differs from a fresh Sync's:\n%s", step, lineDiff(want, got))
		}
		if got := bySync.kernel(t); got != want {
			t.Fatalf("step %d: after Sync the kernel differs from a fresh Sync's:\n%s", step, lineDiff(want, got))
		}
	}
	if refused == 0 {
		t.Fatal("no invalid change was tried")
	}
	held := map[VIPMode]string{VIPAddresses: "\naddress 198.18.", VIPLocalRoutes: "\nroute local 198.18."}[mode]
	if !strings.Contains(bySync.kernel(t), held) {
		t.Errorf("the walk ended with no VIP held as %q: the comparison saw none", held)
	}
}

// cloneServices is a deep copy of m.
func cloneServices(m map[string]Service) map[string]Service {
	out := make(map[string]Service, len(m))
	for k, v := range m {
		out[k] = cloneService(&v)
	}
	return out
}

// An Update sends what its change needs and no more, with no read of the
// kernel: one endpoint added is one request, a service added is its
// virtual server, destinations, VIP and set members.
func TestUpdateSendsOnlyTheChange(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	r.sync(t, *bigState(50))
	calls, linkCalls := r.ipvs.calls, r.link.calls
	svc := bigState(50).Services["svc-7"]
	svc.Endpoints = append(svc.Endpoints, Endpoint{Addr: a("198.18.200.1"), Ready: true})
	res, err := r.p.Update(ctx, map[string]*Service{"svc-7": &svc})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Plan.String(); got != "# ipvs: add and update (ipvsadm -R)\n-a -t 198.19.0.7:80 -r 198.18.200.1:8080 -m -w 1\n" {
		t.Errorf("one endpoint added: plan\n%s", got)
	}
	if r.ipvs.calls != calls+1 || r.link.calls != linkCalls {
		t.Errorf("one endpoint added: %d IPVS calls, %d link calls; want 1 and 0", r.ipvs.calls-calls, r.link.calls-linkCalls)
	}
	res, err = r.p.Update(ctx, map[string]*Service{"new": {
		ClusterIPs: []netip.Addr{a("198.18.100.9")},
		Ports:      []Port{{Name: "http", Protocol: TCP, Port: 80}},
		Endpoints:  []Endpoint{{Addr: a("198.18.1.9"), Ready: true}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := "# netfilter IPv4, first: set members added\n" +
		"add cluster-ip 198.18.100.9,tcp:80\n" +
		"add ipvs-ips 198.18.100.9\n" +
		"add virtual-servers 198.18.100.9,tcp:80\n" +
		"# ipvs: add and update (ipvsadm -R)\n" +
		"-A -t 198.18.100.9:80 -s rr\n" +
		"-a -t 198.18.100.9:80 -r 198.18.1.9:80 -m -w 1\n" +
		"# vips: bind\n" +
		"ip addr add 198.18.100.9/32 dev ipvskit0\n"
	if got := res.Plan.String(); got != want {
		t.Errorf("one service added: plan\n%s\nwant\n%s", got, want)
	}
	if st := r.rules.mem.LastStats(); st.Full || st.ElementsAdded != 3 {
		t.Errorf("one service added: the back end's last apply %+v, want 3 elements, incremental", st)
	}
	res, err = r.p.Update(ctx, map[string]*Service{"new": nil, "gone": nil})
	if err != nil {
		t.Fatal(err)
	}
	want = "# vips: unbind\n" +
		"ip addr del 198.18.100.9/32 dev ipvskit0\n" +
		"# ipvs: delete (ipvsadm -R)\n" +
		"-D -t 198.18.100.9:80\n" +
		"# netfilter IPv4, last: set members deleted\n" +
		"delete cluster-ip 198.18.100.9,tcp:80\n" +
		"delete ipvs-ips 198.18.100.9\n" +
		"delete virtual-servers 198.18.100.9,tcp:80\n"
	if got := res.Plan.String(); got != want {
		t.Errorf("one service removed (and one never there): plan\n%s\nwant\n%s", got, want)
	}
	if res, err = r.p.Update(ctx, nil); err != nil || !res.Plan.Empty() {
		t.Errorf("no change: %v, plan %v", err, res.Plan)
	}
}

// serviceEqual and cloneService know every field: each field changed on
// its own makes services differ, and a clone shares no slice or map with
// its original. A field added to Service or Endpoint fails here until
// both learn it.
func TestServiceEqualAndCloneCoverEveryField(t *testing.T) {
	base := func() Service {
		return Service{
			ClusterIPs: []netip.Addr{a("198.18.100.1")}, IPFamilies: []Family{IPv4}, Ports: []Port{{Name: "http", Protocol: TCP, Port: 80}},
			ExternalIPs: []netip.Addr{a("198.18.102.1")}, LoadBalancerIPs: []netip.Addr{a("198.18.103.1")},
			LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("198.18.20.0/24")},
			SessionAffinity:          &SessionAffinity{Timeout: time.Minute},
			Endpoints:                []Endpoint{{Addr: a("198.18.1.1"), Ports: map[string]int{"http": 8080}, Ready: true}},
		}
	}
	serviceEdits := map[string]func(*Service){
		"ClusterIPs":               func(s *Service) { s.ClusterIPs[0] = a("198.18.100.2") },
		"IPFamilies":               func(s *Service) { s.IPFamilies[0] = IPv6 },
		"Ports":                    func(s *Service) { s.Ports[0].TargetPort = 8080 },
		"ExternalIPs":              func(s *Service) { s.ExternalIPs = nil },
		"LoadBalancerIPs":          func(s *Service) { s.LoadBalancerIPs[0] = a("198.18.103.2") },
		"LoadBalancerSourceRanges": func(s *Service) { s.LoadBalancerSourceRanges[0] = netip.MustParsePrefix("198.18.21.0/24") },
		"SessionAffinity":          func(s *Service) { s.SessionAffinity.Timeout = time.Hour },
		"ExternalTrafficPolicy":    func(s *Service) { s.ExternalTrafficPolicy = Local },
		"InternalTrafficPolicy":    func(s *Service) { s.InternalTrafficPolicy = Local },
		"Scheduler":                func(s *Service) { s.Scheduler = "lc" },
		"SchedulerFlags":           func(s *Service) { s.SchedulerFlags = 1 },
		"OnePacket":                func(s *Service) { s.OnePacket = true },
		"FirewallMark":             func(s *Service) { s.FirewallMark = 1 },
		"HealthCheckNodePort":      func(s *Service) { s.HealthCheckNodePort = 32000 },
		"Forward":                  func(s *Service) { s.Forward = ipvs.DirectRoute },
		"Tunnel":                   func(s *Service) { s.Tunnel.Port = 6080 },
		"Endpoints":                func(s *Service) { s.Endpoints = append(s.Endpoints, Endpoint{Addr: a("198.18.1.2")}) },
	}
	endpointEdits := map[string]func(*Endpoint){
		"Addr":        func(e *Endpoint) { e.Addr = a("198.18.1.3") },
		"Ports":       func(e *Endpoint) { e.Ports["http"] = 8081 },
		"Ready":       func(e *Endpoint) { e.Ready = false },
		"Serving":     func(e *Endpoint) { e.Serving = true },
		"Terminating": func(e *Endpoint) { e.Terminating = true },
		"Local":       func(e *Endpoint) { e.Local = true },
		// Weight 0 and 1 are one weight, yet they differ: every
		// field's value is compared, and the plan finds no change.
		"Weight":         func(e *Endpoint) { e.Weight = 1 },
		"Quiesced":       func(e *Endpoint) { e.Quiesced = true },
		"UpperThreshold": func(e *Endpoint) { e.UpperThreshold = 10 },
		"LowerThreshold": func(e *Endpoint) { e.LowerThreshold = 5 },
	}
	if n := reflect.TypeFor[Service]().NumField(); n != len(serviceEdits) {
		t.Fatalf("Service has %d fields, the test edits %d: teach serviceEqual, cloneService and this test the new one", n, len(serviceEdits))
	}
	if n := reflect.TypeFor[Endpoint]().NumField(); n != len(endpointEdits) {
		t.Fatalf("Endpoint has %d fields, the test edits %d: teach serviceEqual, cloneService and this test the new one", n, len(endpointEdits))
	}
	for name, edit := range serviceEdits {
		orig := base()
		c := cloneService(&orig)
		if !serviceEqual(&orig, &c) {
			t.Fatalf("a clone differs from its original")
		}
		edit(&c)
		if serviceEqual(&orig, &c) {
			t.Errorf("Service.%s changed, yet the services are equal", name)
		}
		if !serviceEqual(&orig, ptr(base())) {
			t.Errorf("changing the clone's %s changed the original", name)
		}
	}
	for name, edit := range endpointEdits {
		orig := base()
		c := cloneService(&orig)
		edit(&c.Endpoints[0])
		if serviceEqual(&orig, &c) {
			t.Errorf("Endpoint.%s changed, yet the services are equal", name)
		}
		if !serviceEqual(&orig, ptr(base())) {
			t.Errorf("changing the clone's endpoint %s changed the original", name)
		}
	}
	empty, none := Service{Ports: []Port{}, Endpoints: []Endpoint{{Ports: map[string]int{}}}}, Service{Endpoints: []Endpoint{{}}}
	if !serviceEqual(&empty, &none) {
		t.Error("empty and missing slices and maps differ")
	}
}

// The Proxier keeps its own copy of what it was given: a caller that
// changes its State in place (an endpoint's condition, a slice element)
// and syncs it again is seen to have changed it, and a caller that changes
// a Service after Update changes nothing the Proxier holds.
func TestSyncSeesChangesMadeInPlace(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	s := oneService()
	r.sync(t, s)
	svc := s.Services["web"]
	svc.Endpoints[0].Ready = false // in place: the same backing array
	res := r.sync(t, s)
	if res.Plan.IPVSDelete.Len()+res.Plan.IPVSAdd.Len() == 0 {
		t.Fatalf("an endpoint made not ready in place: no change planned")
	}
	svc.Endpoints[0].Ready = true
	if _, err := r.p.Update(ctx, map[string]*Service{"web": &svc}); err != nil {
		t.Fatal(err)
	}
	svc.Endpoints[0].Addr = a("198.18.1.99") // after Update: not the Proxier's
	res, err := r.p.Update(ctx, nil)
	if err != nil || !res.Plan.Empty() {
		t.Errorf("a change to the caller's Service after Update reached the Proxier: %v\n%v", err, res.Plan)
	}
}

// Update validates the services it names against those that stay: a
// frontend, node port or health-check port another service holds is
// refused with the holder's path, and nothing changes; in one Update, a
// service may take what another gives up.
func TestUpdateValidatesAgainstTheServicesThatStay(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t)
	if _, err := n.p.Sync(ctx, &State{Node: dualStackNode}); err != nil {
		t.Fatal(err)
	}
	hold := Service{ClusterIPs: []netip.Addr{a("198.18.100.1")}, HealthCheckNodePort: 32000, ExternalTrafficPolicy: Local,
		Ports: []Port{{Name: "http", Protocol: TCP, Port: 80, NodePort: 30080}}}
	if _, err := n.p.Update(ctx, map[string]*Service{"holder": &hold}); err != nil {
		t.Fatal(err)
	}
	before := n.kernel(t)
	for _, c := range []struct {
		name string
		svc  Service
		want string
	}{
		{"frontend", Service{ClusterIPs: []netip.Addr{a("198.18.100.1")}, Ports: []Port{{Protocol: TCP, Port: 80}}},
			`services["thief"].ports[0]: 198.18.100.1:80/TCP is already served by services["holder"].ports[0]`},
		{"node port", Service{Ports: []Port{{Protocol: TCP, Port: 81, NodePort: 30080}}},
			`services["thief"].ports[0].nodePort: 30080 is already used for TCP by services["holder"].ports[0].nodePort`},
		{"health-check port", Service{Ports: []Port{{Protocol: TCP, Port: 81, NodePort: 32000}}},
			`services["thief"].ports[0].nodePort: 32000 is already used for TCP by services["holder"].healthCheckNodePort`},
		{"node address", Service{ClusterIPs: []netip.Addr{a("198.18.0.10")}, Ports: []Port{{Protocol: TCP, Port: 81}}},
			`services["thief"].clusterIPs[0]: 198.18.0.10 equals a node address`},
	} {
		_, err := n.p.Update(ctx, map[string]*Service{"thief": &c.svc})
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a *ValidationError with %q", c.name, err, c.want)
		}
		if n.kernel(t) != before {
			t.Errorf("%s: a refused Update changed the kernel", c.name)
		}
	}
	if _, err := n.p.Update(ctx, map[string]*Service{"holder": nil, "thief": &hold}); err != nil {
		t.Fatalf("taking over what a removed service held: %v", err)
	}
	if got := n.kernel(t); got != before {
		t.Errorf("the same service under another ID changed the kernel:\n%s", lineDiff(before, got))
	}
}

// A Sync with other node addresses goes the whole way: node ports move.
func TestSyncWithAnotherNodeRecomputesEveryService(t *testing.T) {
	ctx := context.Background()
	n := newFakeNode(t)
	s := State{Node: dualStackNode, Services: map[string]Service{"np": {ClusterIPs: []netip.Addr{a("198.18.100.1")},
		Ports: []Port{{Name: "http", Protocol: TCP, Port: 80, NodePort: 30080}}}}}
	if _, err := n.p.Sync(ctx, &s); err != nil {
		t.Fatal(err)
	}
	s.Node = Node{Addresses: []netip.Addr{a("198.18.0.11")}}
	res, err := n.p.Sync(ctx, &s)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Plan.IPVSAdd.Ops(); len(got) != 1 || got[0].Service.Addr != a("198.18.0.11") {
		t.Errorf("node address changed: adds %v", got)
	}
	if got := res.Plan.IPVSDelete.Ops(); len(got) != 1 || got[0].Service.Addr != a("198.18.0.10") {
		t.Errorf("node address changed: deletes %v", got)
	}
}

// skipping is an IPVS whose service dump skips one virtual server the
// first times it is listed, as the kernel's does when another namespace
// deletes services between two replies of a dump.
type skipping struct {
	*ipvstest.Fake
	hide  ipvs.ServiceKey
	times int
}

func (s *skipping) Services(ctx context.Context) ([]ipvs.ServiceInfo, error) {
	svcs, err := s.Fake.Services(ctx)
	if s.times > 0 {
		s.times--
		svcs = slices.DeleteFunc(svcs, func(si ipvs.ServiceInfo) bool { return si.Service.Key() == s.hide })
	}
	return svcs, err
}

// A read back whose dump skips a virtual server of the Proxier's lists
// again: a restarted Proxier does not add it again (and take the refusal
// for someone else's), and a Cleanup does not leave it behind.
func TestADumpThatSkipsOneOfOursIsReadAgain(t *testing.T) {
	ctx := context.Background()
	fake, link, rules := ipvstest.New(), dummytest.New(), iptablestest.New(IPv4)
	newP := func(hidden int) *Proxier {
		p, err := New(nil, Deps{IPVS: &skipping{Fake: fake, hide: web80, times: hidden}, Link: link,
			Sysctls: sysctltest.New(""), Rules: map[Family]Rules{IPv4: rules}})
		must(t, err)
		return p
	}
	s := oneService()
	if _, err := newP(0).Sync(ctx, &s); err != nil {
		t.Fatal(err)
	}
	res, err := newP(2).Sync(ctx, &s)
	if err != nil || res.Plan.IPVSAdd.Len() != 0 {
		t.Fatalf("a restart whose first dumps skip %v: %v, plan:\n%v", web80, err, res.Plan)
	}
	if err := newP(dumpTries - 1).Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if d := fake.Dump(); d != "" {
		t.Errorf("a Cleanup whose first dumps skip %v left:\n%s", web80, d)
	}
}
