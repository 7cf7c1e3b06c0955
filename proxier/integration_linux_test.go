package proxier

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
)

// TestIntegrationProxier serves every kind of service to real traffic in the
// VM, once per netfilter back end, on one topology per back end (see
// topology): two clients, three backends, the node in between. Three
// Proxiers run there one after another (the default options dual stack,
// masquerade-all, and the cluster-CIDR detector), each cleaned up at its
// end, with foreign objects (a virtual server, an nftables table, an ipset,
// an iptables chain) that must survive them all.
func TestIntegrationProxier(t *testing.T) {
	for _, v := range allVariants {
		be := v.be
		t.Run(v.String(), func(t *testing.T) {
			tp := newTopologyIn(t, v, 2, 3)
			tp.addForeign(t)
			t.Run("Default", func(t *testing.T) { testDefault(t, tp, be) })
			t.Run("MasqueradeAll", func(t *testing.T) {
				testMasquerade(t, tp, Config{Backend: be, MasqueradeAll: true}, tp.backends[0].nodeV4)
			})
			t.Run("ClusterCIDRDetector", func(t *testing.T) {
				cfg := Config{Backend: be, LocalDetector: LocalDetector{ClusterCIDRs: []netip.Prefix{pfx("198.18.8.0/21")}}}
				testMasquerade(t, tp, cfg, tp.backends[1].v4)
			})
		})
	}
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// endpoints are the backends' addresses of the given families as ready
// endpoints; local marks the backends (by index) that run on this node.
func (tp *topology) endpoints(v4, v6 bool, which []int, local ...int) []Endpoint {
	var out []Endpoint
	for _, i := range which {
		h := tp.backends[i]
		if v4 {
			out = append(out, Endpoint{Addr: h.v4, Ready: true, Local: slices.Contains(local, i)})
		}
		if v6 {
			out = append(out, Endpoint{Addr: h.v6, Ready: true, Local: slices.Contains(local, i)})
		}
	}
	return out
}

var (
	portHTTP = Port{Name: "http", Protocol: TCP, Port: 80, TargetPort: backendTCPPort}
	portDNS  = Port{Name: "dns", Protocol: UDP, Port: 53, TargetPort: backendUDPPort}
)

// defaultState has a service of every kind, on a dual-stack node whose
// address 198.18.20.1 (client-1's side) carries the node ports.
func (tp *topology) defaultState() State {
	all, two, one := []int{0, 1, 2}, []int{0, 1}, []int{0}
	withNodePort := func(p Port, np int) Port { p.NodePort = np; return p }
	return State{
		Node: Node{Addresses: []netip.Addr{tp.clients[0].nodeV4, tp.clients[0].nodeV6}},
		Services: map[string]Service{
			"web": {
				ClusterIPs: []netip.Addr{a("198.18.100.1"), a("2001:db8:100::1")},
				Ports:      []Port{portHTTP, portDNS},
				Endpoints:  tp.endpoints(true, true, all),
			},
			"nodeport": {
				ClusterIPs: []netip.Addr{a("198.18.100.2")},
				Ports:      []Port{withNodePort(portHTTP, 30080)},
				Endpoints:  tp.endpoints(true, false, two),
			},
			"lb": {
				ClusterIPs:               []netip.Addr{a("198.18.100.3")},
				Ports:                    []Port{portHTTP},
				LoadBalancerIPs:          []netip.Addr{a("198.18.103.1")},
				LoadBalancerSourceRanges: []netip.Prefix{pfx("198.18.20.0/24")}, // client-1, not client-2
				Endpoints:                tp.endpoints(true, false, two),
			},
			"external": {
				ClusterIPs:  []netip.Addr{a("198.18.100.4")},
				Ports:       []Port{portHTTP},
				ExternalIPs: []netip.Addr{a("198.18.102.1")},
				Endpoints:   tp.endpoints(true, false, two),
			},
			"sticky": {
				ClusterIPs:      []netip.Addr{a("198.18.100.5")},
				Ports:           []Port{portHTTP},
				SessionAffinity: &SessionAffinity{},
				Endpoints:       tp.endpoints(true, false, all),
			},
			"local": {
				ClusterIPs:            []netip.Addr{a("198.18.100.6")},
				Ports:                 []Port{withNodePort(portHTTP, 30081)},
				ExternalIPs:           []netip.Addr{a("198.18.102.2")},
				LoadBalancerIPs:       []netip.Addr{a("198.18.103.2")},
				ExternalTrafficPolicy: Local,
				Endpoints:             tp.endpoints(true, false, two, 0), // backend-1 is on this node, backend-2 is not
			},
			"hairpin": {
				ClusterIPs: []netip.Addr{a("198.18.100.7")},
				Ports:      []Port{portHTTP},
				Endpoints:  tp.endpoints(true, false, one, 0),
			},
		},
	}
}

// sync syncs s and checks that the foreign virtual server is still there
// (through netlink: cheap enough for every sync).
func (k *nodeKit) sync(t *testing.T, s State) *Result {
	t.Helper()
	res, err := k.p.Sync(context.Background(), &s)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	k.checkForeignServer(t)
	return res
}

func (k *nodeKit) checkForeignServer(t *testing.T) {
	t.Helper()
	svcs, err := k.ipvs.Services(context.Background())
	must(t, err)
	fk := ipvs.ServiceKey{Family: ipvs.IPv4, Protocol: ipvs.TCP, Addr: a("198.18.200.1"), Port: 8000}
	for _, s := range svcs {
		if s.Service.Key() == fk {
			if s.Scheduler != "wrr" {
				t.Errorf("foreign virtual server changed: %+v", s.Service)
			}
			ds, err := k.ipvs.Destinations(context.Background(), fk)
			must(t, err)
			if len(ds) != 1 || ds[0].Addr != a("198.18.11.2") || ds[0].Port != 8080 || ds[0].Weight != 3 {
				t.Errorf("foreign virtual server's destinations changed: %v", ds)
			}
			return
		}
	}
	t.Errorf("foreign virtual server %v gone", fk)
}

func (k *nodeKit) cleanup(t *testing.T, tp *topology) {
	t.Helper()
	if err := k.p.Cleanup(context.Background()); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	s := tp.snapshot(t)
	checkNothingOurs(t, s)
	checkForeign(t, s)
}

func wantCounts(t *testing.T, what string, rs []reply, want map[string]int) {
	t.Helper()
	if got := count(rs); !maps.Equal(got, want) {
		t.Errorf("%s: answers %v, want %v (%v)", what, got, want, rs)
	}
}

func wantPeers(t *testing.T, what string, rs []reply, want ...netip.Addr) {
	t.Helper()
	got := peers(rs)
	wm := map[netip.Addr]bool{}
	for _, w := range want {
		wm[w] = true
	}
	if !maps.Equal(got, wm) {
		t.Errorf("%s: backends saw sources %v, want %v (%v)", what, slices.Collect(maps.Keys(got)), want, rs)
	}
}

func testDefault(t *testing.T, tp *topology, be Backend) {
	k := tp.newProxier(t, Config{Backend: be, Families: []Family{IPv4, IPv6}})
	state := tp.defaultState()
	first := k.sync(t, state)
	c1, c2 := tp.clients[0], tp.clients[1]
	b1, b2, b3 := tp.backends[0], tp.backends[1], tp.backends[2]
	eachOf := func(n int, hs ...*host) map[string]int {
		m := map[string]int{}
		for _, h := range hs {
			m[h.name] = n
		}
		return m
	}

	t.Run("ClusterIPTCPRoundRobin", func(t *testing.T) {
		rs := c1.tcp(t, ap("198.18.100.1:80"), 6)
		wantCounts(t, "TCP to the cluster IP", rs, eachOf(2, b1, b2, b3))
		// No detector, no masquerade-all: a cluster IP keeps the source.
		wantPeers(t, "TCP to the cluster IP", rs, c1.v4)
	})
	t.Run("ClusterIPUDPRoundRobin", func(t *testing.T) {
		rs := c1.udp(t, ap("198.18.100.1:53"), 6)
		wantCounts(t, "UDP to the cluster IP", rs, eachOf(2, b1, b2, b3))
		wantPeers(t, "UDP to the cluster IP", rs, c1.v4)
	})
	t.Run("IPv6ClusterIP", func(t *testing.T) {
		rs := c1.tcp(t, ap("[2001:db8:100::1]:80"), 3)
		wantCounts(t, "TCP to the IPv6 cluster IP", rs, eachOf(1, b1, b2, b3))
		wantPeers(t, "TCP to the IPv6 cluster IP", rs, c1.v6)
		rs = c1.udp(t, ap("[2001:db8:100::1]:53"), 3)
		wantCounts(t, "UDP to the IPv6 cluster IP", rs, eachOf(1, b1, b2, b3))
	})
	t.Run("NodePort", func(t *testing.T) {
		rs := c1.tcp(t, netip.AddrPortFrom(c1.nodeV4, 30080), 4)
		wantCounts(t, "TCP to the node port", rs, eachOf(2, b1, b2))
		// External traffic policy Cluster: masqueraded to the node's
		// address on each backend's link.
		wantPeers(t, "TCP to the node port", rs, b1.nodeV4, b2.nodeV4)
	})
	t.Run("LoadBalancerSourceRanges", func(t *testing.T) {
		vip := ap("198.18.103.1:80")
		rs := c1.tcp(t, vip, 2)
		wantCounts(t, "client-1 (admitted) to the load balancer", rs, eachOf(1, b1, b2))
		r, err := c2.tcpOnce(t, vip, 3*time.Second)
		if err == nil {
			t.Fatalf("client-2 (outside the source ranges) got an answer from the load balancer: %v", r)
		}
		if !isTimeout(err) {
			t.Errorf("client-2's connection was not dropped but: %v", err)
		}
		// The drop happened before IPVS: its connection table has
		// client-1's connections and none of client-2.
		conns := tp.ipvsConns(t)
		if !conns[c1.v4] {
			t.Errorf("IPVS connection table lacks the admitted client %v: %v", c1.v4, conns)
		}
		if conns[c2.v4] {
			t.Errorf("IPVS scheduled a connection for the dropped client %v: %v", c2.v4, conns)
		}
	})
	t.Run("ExternalIP", func(t *testing.T) {
		rs := c1.tcp(t, ap("198.18.102.1:80"), 4)
		wantCounts(t, "TCP to the external IP", rs, eachOf(2, b1, b2))
		wantPeers(t, "TCP to the external IP", rs, b1.nodeV4, b2.nodeV4)
	})
	t.Run("SessionAffinity", func(t *testing.T) {
		rs := c1.tcp(t, ap("198.18.100.5:80"), 5)
		if got := count(rs); len(got) != 1 {
			t.Errorf("one client with session affinity reached %v, want one backend for all 5", got)
		}
	})
	t.Run("ExternalTrafficPolicyLocal", func(t *testing.T) {
		rs := c1.tcp(t, ap("198.18.102.2:80"), 3)
		rs = append(rs, c1.tcp(t, netip.AddrPortFrom(c1.nodeV4, 30081), 3)...)
		rs = append(rs, c1.tcp(t, ap("198.18.103.2:80"), 3)...)
		wantCounts(t, "external IP, node port and load balancer, policy Local", rs, eachOf(9, b1))
		wantPeers(t, "external IP, node port and load balancer, policy Local", rs, c1.v4)
	})
	t.Run("Hairpin", func(t *testing.T) {
		rs := b1.tcp(t, ap("198.18.100.7:80"), 2)
		wantCounts(t, "backend-1 to its own service", rs, eachOf(2, b1))
		// Masqueraded to the node's address, so the reply comes back
		// through IPVS rather than straight to itself.
		wantPeers(t, "backend-1 to its own service", rs, b1.nodeV4)
	})
	t.Run("KernelState", func(t *testing.T) { checkDefaultState(t, tp, k, first) })
	t.Run("NoOpAndOneEndpoint", func(t *testing.T) {
		if res := k.sync(t, state); !res.Plan.Empty() {
			t.Errorf("a sync with no change planned:\n%v", res.Plan)
		}
		web := state.Services["web"]
		web.Endpoints = slices.DeleteFunc(slices.Clone(web.Endpoints), func(e Endpoint) bool { return e.Addr == b3.v4 })
		state.Services["web"] = web
		res := k.sync(t, state)
		// backend-3 leaves the IPv4 TCP and UDP virtual servers.
		if n := res.Plan.IPVSAdd.Len() + res.Plan.IPVSDelete.Len(); n != 2 {
			t.Errorf("removing one endpoint of a two-port service cost %d IPVS requests, want 2:\n%v", n, res.Plan)
		}
		wantCounts(t, "TCP to the cluster IP after scale down", c1.tcp(t, ap("198.18.100.1:80"), 4), eachOf(2, b1, b2))
		wantCounts(t, "IPv6 untouched", c1.tcp(t, ap("[2001:db8:100::1]:80"), 3), eachOf(1, b1, b2, b3))
	})
	t.Run("ForeignVIPPortConflict", func(t *testing.T) {
		thief := State{Node: state.Node, Services: maps.Clone(state.Services)}
		thief.Services["thief"] = Service{
			ClusterIPs: []netip.Addr{a("198.18.200.1")},
			Ports:      []Port{{Name: "x", Protocol: TCP, Port: 8000, TargetPort: backendTCPPort}},
			Endpoints:  tp.endpoints(true, false, []int{1, 2}),
		}
		// The proxier has not read the foreign virtual server: the kernel
		// refuses the add, and the destinations the batch added to it
		// anyway are taken back.
		_, err := k.p.Sync(context.Background(), &thief)
		if !errors.Is(err, fs.ErrExist) {
			t.Fatalf("sync over a foreign virtual server: %v", err)
		}
		k.checkForeignServer(t)
		// Now it knows: a *ConflictError naming both, nothing applied.
		_, err = k.p.Sync(context.Background(), &thief)
		var ce *ConflictError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), `services["thief"]`) || !strings.Contains(err.Error(), "198.18.200.1:8000") {
			t.Fatalf("want a conflict naming both, got %v", err)
		}
		k.checkForeignServer(t)
		k.sync(t, state)
		wantCounts(t, "TCP to the cluster IP after the conflict", c1.tcp(t, ap("198.18.100.1:80"), 2), eachOf(1, b1, b2))
	})
	k2 := tp.newProxier(t, k.p.cfg) // on t: its clients must outlive the subtest
	t.Run("Takeover", func(t *testing.T) {
		// A new Proxier over the node (a restart) takes it over: no IPVS
		// request and no VIP bound, except that the service the State no
		// longer has goes (one delete, one unbind), and traffic keeps
		// flowing.
		delete(state.Services, "hairpin")
		res := k2.sync(t, state)
		if got := kinds(&res.Plan.IPVSDelete); res.Plan.IPVSAdd.Len() != 0 || len(res.Plan.Bind) != 0 ||
			!slices.Equal(got, []string{"delete service tcp 198.18.100.7:80"}) || !slices.Equal(res.Plan.Unbind, []netip.Addr{a("198.18.100.7")}) {
			t.Errorf("takeover plan:\n%v", res.Plan)
		}
		if res := k2.sync(t, state); !res.Plan.Empty() {
			t.Errorf("the sync after a takeover is not a no-op:\n%v", res.Plan)
		}
		wantCounts(t, "TCP to the cluster IP after takeover", c1.tcp(t, ap("198.18.100.1:80"), 2), eachOf(1, b1, b2))
	})
	k = k2
	t.Run("Cleanup", func(t *testing.T) { k.cleanup(t, tp) })
}

// testMasquerade checks one masquerade option with one service whose only
// endpoint is backend-1: client-1 (outside any cluster CIDR) must be
// masqueraded, and backend-2 must be seen as fromBackend2.
func testMasquerade(t *testing.T, tp *topology, cfg Config, fromBackend2 netip.Addr) {
	k := tp.newProxier(t, cfg)
	k.sync(t, State{Services: map[string]Service{"web": {
		ClusterIPs: []netip.Addr{a("198.18.100.1")},
		Ports:      []Port{portHTTP},
		Endpoints:  tp.endpoints(true, false, []int{0}),
	}}})
	b1 := tp.backends[0]
	rs := tp.clients[0].tcp(t, ap("198.18.100.1:80"), 2)
	wantCounts(t, "client-1 to the cluster IP", rs, map[string]int{b1.name: 2})
	wantPeers(t, "client-1 to the cluster IP", rs, b1.nodeV4)
	rs = tp.backends[1].tcp(t, ap("198.18.100.1:80"), 2)
	wantCounts(t, "backend-2 to the cluster IP", rs, map[string]int{b1.name: 2})
	wantPeers(t, "backend-2 to the cluster IP", rs, fromBackend2)
	k.cleanup(t, tp)
}

// checkDefaultState cross-checks the kernel after the default State's first
// sync with the reference tools.
func checkDefaultState(t *testing.T, tp *topology, k *nodeKit, first *Result) {
	s := tp.snapshot(t)
	checkForeign(t, s)

	// ipvsadm -Sn holds exactly the foreign lines and the first plan's.
	text, err := ipvsadm.MarshalBatch(&first.Plan.IPVSAdd)
	must(t, err)
	want := slices.Clone(foreignIPVS)
	want = append(want, strings.Split(strings.TrimSpace(string(text)), "\n")...)
	slices.Sort(want)
	if got := s.ipvsLines(); !slices.Equal(got, want) {
		t.Errorf("ipvsadm -Sn:\n%s\nwant (foreign + plan):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	checkContains(t, s, "ipvsadm",
		"-A -t 198.18.100.1:80 -s rr",
		"-a -t 198.18.100.1:80 -r 198.18.11.2:8080 -m -w 1",
		"-A -u 198.18.100.1:53 -s rr",
		"-a -u 198.18.100.1:53 -r 198.18.13.2:5353 -m -w 1",
		"-A -t [2001:db8:100::1]:80 -s rr",
		"-a -t [2001:db8:100::1]:80 -r [2001:db8:12::2]:8080 -m -w 1",
		"-A -t 198.18.20.1:30080 -s rr",
		"-A -t 198.18.103.1:80 -s rr",
		"-A -t 198.18.102.1:80 -s rr",
		"-A -t 198.18.100.5:80 -s rr -p 10800",
		"-A -t 198.18.102.2:80 -s rr",
		"-a -t 198.18.102.2:80 -r 198.18.11.2:8080 -m -w 1",
	)
	// Policy Local: backend-2 is not on this node.
	checkLacks(t, s, "ipvsadm", "-a -t 198.18.102.2:80 -r 198.18.12.2:8080", "-a -t 198.18.20.1:30081 -r 198.18.12.2:8080")

	// The VIPs are on the VIP link, held as the mode holds them, and not
	// in the other form; the node's address is not there.
	mode := k.p.cfg.VIPMode
	held := s.vipsOn(DefaultLinkName, mode)
	for _, v := range []string{"198.18.100.1/32", "2001:db8:100::1/128", "198.18.102.1/32", "198.18.103.1/32", "198.18.100.7/32"} {
		if !slices.Contains(held, v) {
			t.Errorf("VIP %s not on %s (%v):\n%s%s", v, DefaultLinkName, mode, s["addr"], s["route"])
		}
	}
	if slices.ContainsFunc(held, func(v string) bool { return strings.HasPrefix(v, "198.18.20.1/") }) {
		t.Errorf("node address held on the VIP link: %v", held)
	}
	other := VIPAddresses
	if mode == VIPAddresses {
		other = VIPLocalRoutes
	}
	if got := s.vipsOn(DefaultLinkName, other); len(got) != 0 {
		t.Errorf("VIPs held as %v too: %v", other, got)
	}

	switch k.p.cfg.Backend {
	case NFTables:
		checkContains(t, s, "nft",
			"table ip ipvskit", "table ip6 ipvskit",
			"198.18.100.1 . tcp . 80", "198.18.100.1 . udp . 53", "2001:db8:100::1 . tcp . 80",
			"198.18.103.1 . tcp . 80 . 198.18.20.0/24",
			"198.18.11.2 . tcp . 8080 . 198.18.11.2", // loop-back: hairpin
		)
		for _, sec := range []string{"iptables-legacy", "iptables-nft", "ip6tables-legacy", "ip6tables-nft"} {
			checkLacks(t, s, sec, "IPVSKIT-", "ipvskit:")
		}
		checkLacks(t, s, "ipset", " IPVSKIT-")
	case IPTables:
		checkContains(t, s, "ipset",
			"add IPVSKIT-CLUSTER-IP 198.18.100.1,tcp:80", "add IPVSKIT-CLUSTER-IP 198.18.100.1,udp:53",
			"add IPVSKIT-6-CLUSTER-IP 2001:db8:100::1,tcp:80",
			"add IPVSKIT-IPVS-IPS 198.18.100.1", "add IPVSKIT-6-IPVS-IPS 2001:db8:100::1",
			"add IPVSKIT-LB-SOURCE-CIDR 198.18.103.1,tcp:80,198.18.20.0/24",
			"add IPVSKIT-LOOP-BACK 198.18.11.2,tcp:8080,198.18.11.2",
			"add IPVSKIT-NODE-PORT-TCP 30080", "add IPVSKIT-NP-LOCAL-TCP 30081",
			"add IPVSKIT-EXTERNAL-LOCAL 198.18.102.2,tcp:80",
			"add IPVSKIT-VIRTUAL-SERVERS 198.18.100.1,tcp:80",
		)
		for _, v6 := range []bool{false, true} {
			save := s.iptablesSave(v6, k.flavor)
			for _, w := range []string{`-A PREROUTING -m comment --comment "ipvskit:ipvskit" -j IPVSKIT-SERVICES`, "-A IPVSKIT-SERVICES", "-A IPVSKIT-POSTROUTING"} {
				if !strings.Contains(save, w) {
					t.Errorf("%s (v6 %v) lacks %q:\n%s", fmt.Sprintf("iptables-%v-save", k.flavor), v6, w, save)
				}
			}
		}
		checkLacks(t, s, "nft", "ipvskit")
	}
}
