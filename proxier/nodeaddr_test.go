package proxier

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/iptables"
)

// nodeAddr is the node's own address in these tests, held on its "eth0".
var nodeAddr = a("198.18.0.10")

// onNodeAddr is a State whose external IP (web, with a node port) and
// load-balancer IP (lb) are the node's own address.
func onNodeAddr() State {
	eps := []Endpoint{{Addr: a("198.18.1.1"), Ready: true}, {Addr: a("198.18.1.2"), Ready: true}}
	return State{
		Node: Node{Addresses: []netip.Addr{nodeAddr}},
		Services: map[string]Service{
			"web": {
				ClusterIPs:  []netip.Addr{a("198.18.100.1")},
				Ports:       []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080, NodePort: 30080}},
				ExternalIPs: []netip.Addr{nodeAddr},
				Endpoints:   eps,
			},
			"lb": {
				ClusterIPs:      []netip.Addr{a("198.18.100.2")},
				Ports:           []Port{{Name: "http", Protocol: TCP, Port: 81, TargetPort: 8080}},
				LoadBalancerIPs: []netip.Addr{nodeAddr},
				Endpoints:       eps,
			},
		},
	}
}

// newNodeWorld is a vipWorld whose node has nodeAddr on eth0.
func newNodeWorld(t *testing.T) *vipWorld {
	t.Helper()
	w := newVIPWorld()
	must(t, w.link.AddLink("eth0", "veth"))
	must(t, w.link.AddAddr("eth0", netip.PrefixFrom(nodeAddr, 24)))
	return w
}

// checkEth0 fails unless eth0 still holds the node's address, alone.
func (w *vipWorld) checkEth0(t *testing.T, when string) {
	t.Helper()
	if ps, _ := w.link.LinkAddrs("eth0"); !slices.Equal(ps, []netip.Prefix{netip.PrefixFrom(nodeAddr, 24)}) {
		t.Errorf("%s: eth0 holds %v, want the node's %v/24", when, ps, nodeAddr)
	}
}

// An external IP and a load-balancer IP that are a node address get their
// virtual servers, beside the node port on that address, and kube-proxy's
// set members for them, but are neither bound nor routed on the VIP link,
// nor in the IPVSIPs set (whose filter rule would refuse the node's other
// ports): not owned, so no drift for Reconcile and nothing for Cleanup to
// unbind, in either VIP mode.
func TestNodeAddressVIPIsServedUnbound(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []VIPMode{VIPAddresses, VIPLocalRoutes} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newNodeWorld(t)
			vips := -1
			p := w.proxier(t, Config{VIPMode: mode, Observer: ObserverFunc(func(e Event) {
				if se, ok := e.(*SyncEvent); ok {
					vips = se.VIPs
				}
			})})
			s := onNodeAddr()
			res, err := p.Sync(ctx, &s)
			must(t, err)
			for _, vs := range []string{"-A -t 198.18.0.10:80 ", "-A -t 198.18.0.10:81 ", "-A -t 198.18.0.10:30080 "} {
				if !strings.Contains(w.ipvs.Dump(), vs) {
					t.Errorf("IPVS lacks %q:\n%s", vs, w.ipvs.Dump())
				}
			}
			if slices.Contains(res.Plan.Bind, nodeAddr) {
				t.Errorf("the plan binds the node address:\n%s", res.Plan)
			}
			addrs, routes := w.held(DefaultLinkName)
			if slices.Contains(addrs, nodeAddr) || slices.Contains(routes, nodeAddr) {
				t.Errorf("the VIP link holds the node address: addresses %v, routes %v", addrs, routes)
			}
			if n := len(addrs) + len(routes); n != 2 {
				t.Errorf("the VIP link holds %d VIPs (addresses %v, routes %v), want the two cluster IPs", n, addrs, routes)
			}
			r := w.rules.Ruleset()
			if slices.Contains(r.Members(iptables.IPVSIPs), iptables.Addr(nodeAddr)) {
				t.Errorf("IPVSIPs holds the node address: %v", r.Members(iptables.IPVSIPs))
			}
			for set, m := range map[iptables.SetName]iptables.Member{
				iptables.ExternalIPSet: iptables.AddrPort(nodeAddr, TCP, 80),
				iptables.LoadBalancer:  iptables.AddrPort(nodeAddr, TCP, 81),
			} {
				if !slices.Contains(r.Members(set), m) {
					t.Errorf("%v lacks %v: %v", set, m, r.Members(set))
				}
			}
			if vips != 2 {
				t.Errorf("the SyncEvent counts %d VIPs, want the two cluster IPs", vips)
			}

			// Someone binds the node's address on the VIP link too: not ours,
			// so not drift, and left where it is.
			must(t, w.link.AddAddr(DefaultLinkName, netip.PrefixFrom(nodeAddr, 32)))
			rep, err := p.Reconcile(ctx)
			must(t, err)
			if len(rep.Drift) != 0 {
				t.Errorf("Reconcile reports drift: %v", rep.Drift)
			}
			if addrs, _ := w.held(DefaultLinkName); !slices.Contains(addrs, nodeAddr) {
				t.Errorf("Reconcile unbound the node address someone bound: %v", addrs)
			}
			w.link.ops = nil
			must(t, p.Cleanup(ctx))
			if strings.Contains(w.ipvs.Dump(), "198.18.0.10") {
				t.Errorf("Cleanup left virtual servers on the node address:\n%s", w.ipvs.Dump())
			}
			for _, op := range w.link.ops {
				if strings.HasSuffix(op, " "+nodeAddr.String()) {
					t.Errorf("Cleanup sent %q", op)
				}
			}
			w.checkEth0(t, "after Cleanup")
		})
	}
}

// kube-proxy binds no address of the node's on kube-ipvs0 (it skips the
// addresses of the node's other links), but an older one did, and anyone
// may: the adopting Sync takes such a copy for kube-proxy's, as it takes
// every address of the link, and removes it, as kube-proxy's own next sync
// would. The node's address on its own link is never touched.
func TestAdoptingRemovesTheNodeAddressCopyOnKubeIPVS0(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []VIPMode{VIPAddresses, VIPLocalRoutes} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newNodeWorld(t)
			must(t, w.link.AddLinkAlias("kube-ipvs0", "dummy", ""))
			must(t, w.link.AddAddr("kube-ipvs0", netip.PrefixFrom(nodeAddr, 32)))
			p := w.proxier(t, Config{VIPMode: mode, KubeProxyNames: true, AdoptKubeProxy: true})
			s := onNodeAddr()
			res, err := p.Sync(ctx, &s)
			must(t, err)
			if addrs, routes := w.held("kube-ipvs0"); slices.Contains(addrs, nodeAddr) || slices.Contains(routes, nodeAddr) {
				t.Errorf("kube-ipvs0 still holds the node address: addresses %v, routes %v (plan:\n%s)", addrs, routes, res.Plan)
			}
			w.checkEth0(t, "after the adopting Sync")
			rep, err := p.Reconcile(ctx)
			must(t, err)
			if len(rep.Drift) != 0 {
				t.Errorf("Reconcile after adoption reports drift: %v", rep.Drift)
			}
		})
	}
}

// A Node change that makes a bound external IP a node address unbinds it
// (the node holds it now) and keeps its virtual server; the reverse binds
// it again.
func TestExternalIPBecomingANodeAddress(t *testing.T) {
	ctx := context.Background()
	w := newVIPWorld()
	p := w.proxier(t, Config{})
	s := onNodeAddr()
	s.Node.Addresses = nil
	s.Services["web"] = func(svc Service) Service { svc.Ports[0].NodePort = 0; return svc }(s.Services["web"])
	_, err := p.Sync(ctx, &s)
	must(t, err)
	if addrs, _ := w.held(DefaultLinkName); !slices.Contains(addrs, nodeAddr) {
		t.Fatalf("not a node address yet, the external IP is not bound: %v", addrs)
	}
	s.Node.Addresses = []netip.Addr{nodeAddr}
	res, err := p.Sync(ctx, &s)
	must(t, err)
	if addrs, _ := w.held(DefaultLinkName); slices.Contains(addrs, nodeAddr) || !slices.Contains(res.Plan.Unbind, nodeAddr) {
		t.Errorf("a node address now, the external IP is still bound: %v (plan:\n%s)", addrs, res.Plan)
	}
	if res.Plan.IPVSDelete.Len() != 0 || !strings.Contains(w.ipvs.Dump(), "-A -t 198.18.0.10:80 ") {
		t.Errorf("the virtual server did not stay:\n%s\nplan:\n%s", w.ipvs.Dump(), res.Plan)
	}
	s.Node.Addresses = nil
	_, err = p.Sync(ctx, &s)
	must(t, err)
	if addrs, _ := w.held(DefaultLinkName); !slices.Contains(addrs, nodeAddr) {
		t.Errorf("no longer a node address, the external IP is not bound again: %v", addrs)
	}
}

// On a node address, an external or load-balancer IP's frontend and a node
// port (or health-check node port) at the same port would be one virtual
// server: refused, in a whole State and in an Update, whichever comes
// first; a cluster IP may not be a node address at all. An Update that
// adds a frontend on the node address elsewhere serves it unbound.
func TestNodeAddressFrontendClashes(t *testing.T) {
	clash := onNodeAddr()
	lb := clash.Services["lb"]
	lb.Ports[0].Port = 30080 // web's node port, on the node address
	clash.Services["lb"] = lb
	hc := onNodeAddr()
	hc.Services["hc"] = Service{Ports: []Port{{Protocol: TCP, Port: 9}}, ExternalTrafficPolicy: Local, HealthCheckNodePort: 81}
	onNode := onNodeAddr()
	onNode.Services["c"] = Service{ClusterIPs: []netip.Addr{nodeAddr}, Ports: []Port{{Protocol: TCP, Port: 9}}}
	for _, tc := range []struct {
		name string
		s    State
		want string
	}{
		{"node port", clash, `services["web"].ports[0].nodePort: 30080 is also the port of services["lb"].ports[0] on a node address`},
		{"health-check port", hc, `services["lb"].ports[0]: 198.18.0.10:81/TCP is on a node address at a port services["hc"].healthCheckNodePort uses`},
		{"cluster IP", onNode, `services["c"].clusterIPs[0]: 198.18.0.10 equals a node address`},
	} {
		err := tc.s.Validate(&Config{})
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 1 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want the one problem %q", tc.name, err, tc.want)
		}
	}

	// The same clashes met by an Update, against the services that stay.
	ctx := context.Background()
	w := newVIPWorld()
	p := w.proxier(t, Config{})
	s := onNodeAddr()
	_, err := p.Sync(ctx, &s)
	must(t, err)
	before := w.ipvs.Dump()
	for _, tc := range []struct {
		name string
		svc  Service
		want string
	}{
		{"a frontend at a node port", Service{Ports: []Port{{Protocol: TCP, Port: 30080}}, ExternalIPs: []netip.Addr{nodeAddr}},
			`services["new"].ports[0]: 198.18.0.10:30080/TCP is on a node address at a port services["web"].ports[0].nodePort uses`},
		{"a node port at a frontend", Service{Ports: []Port{{Protocol: TCP, Port: 9, NodePort: 81}}},
			`services["new"].ports[0].nodePort: 81 is also the port of services["lb"].ports[0] on a node address`},
	} {
		_, err := p.Update(ctx, map[string]*Service{"new": &tc.svc})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Update with %s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if got := w.ipvs.Dump(); got != before {
		t.Errorf("a refused Update changed IPVS:\n%s", got)
	}
	// Another protocol, or a port that is no node port, is no clash.
	ok := Service{Ports: []Port{{Name: "a", Protocol: UDP, Port: 30080}, {Name: "b", Protocol: TCP, Port: 82}}, ExternalIPs: []netip.Addr{nodeAddr}}
	res, err := p.Update(ctx, map[string]*Service{"new": &ok})
	if err != nil {
		t.Fatalf("Update with an external IP on the node address at free ports: %v", err)
	}
	if addrs, _ := w.held(DefaultLinkName); slices.Contains(addrs, nodeAddr) || res.Plan.IPVSAdd.Len() != 2 {
		t.Errorf("the Update bound the node address (%v) or did not add its two virtual servers:\n%s", addrs, res.Plan)
	}
}
