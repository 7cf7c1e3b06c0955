package convert

import (
	"flag"
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/ipvskit/ipvskit/kube/internal/walk"
	"github.com/ipvskit/ipvskit/proxier"
)

var walkSteps = flag.Int("walk.steps", 3000, "steps of each converter walk (TestConverterWalk)")

// walkNodes are the nodes the walks convert for: dual-stack with node-port
// CIDRs, IPv4 only, and IPv6 only with a node name no endpoint has.
func walkNodes() map[string]Node {
	addrs := []netip.Addr{netip.MustParseAddr(walk.NodeIPv4), netip.MustParseAddr(walk.NodeIPv6), netip.MustParseAddr("127.0.0.1")}
	return map[string]Node{
		"dual": {Name: walk.NodeName, Zone: walk.Zone, Addresses: addrs, Families: []proxier.Family{proxier.IPv4, proxier.IPv6},
			NodePortCIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/16")}},
		"ipv4": {Name: walk.NodeName, Zone: walk.Zone, Addresses: addrs[:1]},
		"ipv6": {Name: "node-c", Addresses: addrs[1:2], Families: []proxier.Family{proxier.IPv6}},
	}
}

// TestConverterWalk feeds a Converter a random walk of Service and
// EndpointSlice events and checks after each step that its State and
// Skipped equal Convert's of the same cluster, and that the changes it
// returned take the State before the step to the State after.
func TestConverterWalk(t *testing.T) {
	for name, node := range walkNodes() {
		t.Run(name, func(t *testing.T) {
			w := walk.New(uint64(len(name)) * 7919)
			x := NewConverter(node)
			have := map[string]proxier.Service{}
			for step := range *walkSteps {
				ev := w.Next()
				applyEvent(x, ev)
				changes, _ := x.Changes()
				for id, s := range changes {
					if s == nil {
						delete(have, id)
					} else {
						have[id] = *s
					}
				}
				want, wantSkipped := Convert(Input{Services: w.Services(), Slices: w.Slices(), Node: node})
				if d := cmp.Diff(want.Services, x.State().Services, cmpOpts); d != "" {
					t.Fatalf("step %d (%v): State (-Convert +Converter):\n%s", step, ev, d)
				}
				if d := cmp.Diff(want.Services, have, cmpOpts); d != "" {
					t.Fatalf("step %d (%v): the changes applied (-Convert +changes):\n%s", step, ev, d)
				}
				if d := cmp.Diff(want.Node, x.State().Node, cmpOpts); d != "" {
					t.Fatalf("step %d (%v): Node (-Convert +Converter):\n%s", step, ev, d)
				}
				if d := cmp.Diff(wantSkipped, x.Skipped()); d != "" {
					t.Fatalf("step %d (%v): Skipped (-Convert +Converter):\n%s", step, ev, d)
				}
			}
		})
	}
}

func applyEvent(x *Converter, ev walk.Event) {
	switch {
	case ev.Service != nil && ev.Delete:
		x.DeleteService(ev.Service.Namespace, ev.Service.Name)
	case ev.Service != nil:
		x.SetService(ev.Service)
	case ev.Delete:
		x.DeleteSlice(ev.Slice.Namespace, ev.Slice.Name)
	default:
		x.SetSlice(ev.Slice)
	}
}

// TestConverterNews checks that Changes reports a Skipped once, when it
// appears, and again only after it went away.
func TestConverterNews(t *testing.T) {
	x := NewConverter(node())
	a := service("a", []string{"198.18.1.1"}, []corev1.ServicePort{tcp("http", 80)}, externalIPs("198.18.2.1"))
	b := service("b", []string{"198.18.1.2"}, []corev1.ServicePort{tcp("http", 80)}, externalIPs("198.18.2.1"))
	x.SetService(a)
	if _, news := x.Changes(); len(news) != 0 {
		t.Fatalf("news after a alone: %v", news)
	}
	x.SetService(b)
	_, news := x.Changes()
	if got := fmt.Sprint(news); got != "[ns/b:http: external IP 198.18.2.1 port 80/TCP is ns/a:http's too: left out]" {
		t.Fatalf("news after b: %s", got)
	}
	x.SetService(b) // the same again: nothing new
	if _, news := x.Changes(); len(news) != 0 {
		t.Fatalf("news after b again: %v", news)
	}
	// The first claimant goes: the second is served, and nothing is new.
	x.DeleteService("ns", "a")
	changes, news := x.Changes()
	if len(news) != 0 || changes["ns/a:http"] != nil || changes["ns/b:http"] == nil ||
		len(changes["ns/b:http"].ExternalIPs) != 1 {
		t.Fatalf("after deleting a: news %v, changes %v", news, changes)
	}
}
