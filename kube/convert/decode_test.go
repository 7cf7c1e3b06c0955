package convert

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func names[T interface{ GetNamespace() string }](objs []T, name func(T) string) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+name(o))
	}
	return out
}

func svcNames(s []*corev1.Service) []string {
	return names(s, func(s *corev1.Service) string { return s.Name })
}

func sliceNames(s []*discoveryv1.EndpointSlice) []string {
	return names(s, func(s *discoveryv1.EndpointSlice) string { return s.Name })
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		svcs, eps  []string
		checkFirst func(t *testing.T, s *corev1.Service)
	}{
		{name: "empty"},
		{name: "comments and separators only", in: "# nothing\n---\n---\n# here\n"},
		{
			name: "single YAML object",
			in:   "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {clusterIP: 198.18.100.1, ports: [{port: 80}]}\n",
			svcs: []string{"shop/web"},
			checkFirst: func(t *testing.T, s *corev1.Service) {
				if s.Spec.ClusterIP != "198.18.100.1" || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 80 {
					t.Errorf("spec = %+v", s.Spec)
				}
			},
		},
		{
			name: "single JSON object",
			in:   `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"web-1","namespace":"shop"},"addressType":"IPv4"}`,
			eps:  []string{"shop/web-1"},
		},
		{
			name: "a stream of JSON objects",
			in: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"x"}}
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"x"}}
{"apiVersion":"v1","kind":"Service","metadata":{"name":"b","namespace":"x"}}`,
			svcs: []string{"x/a", "x/b"},
		},
		{
			name: "typed lists whose items name no kind",
			in: `apiVersion: v1
kind: ServiceList
items:
- metadata: {name: a, namespace: x}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSliceList
items:
- metadata: {name: a-1, namespace: x}
  addressType: IPv4
`,
			svcs: []string{"x/a"},
			eps:  []string{"x/a-1"},
		},
		{
			name: "other kinds, other versions and kindless items are ignored",
			in: `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {items: "x"}}
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: d}}
- {apiVersion: discovery.k8s.io/v1beta1, kind: EndpointSlice, metadata: {name: old}}
- {apiVersion: v2, kind: Service, metadata: {name: future}}
- {metadata: {name: nokind}}
- {apiVersion: v1, kind: Service, metadata: {name: kept, namespace: x}}
`,
			svcs: []string{"x/kept"},
		},
		{
			name: "unknown fields are ignored",
			in:   "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {futureField: {a: 1}, clusterIP: 198.18.100.1}\n",
			svcs: []string{"shop/web"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svcs, eps, err := Decode(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.svcs, svcNames(svcs)); d != "" {
				t.Errorf("services (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.eps, sliceNames(eps)); d != "" {
				t.Errorf("slices (-want +got):\n%s", d)
			}
			if tc.checkFirst != nil && len(svcs) > 0 {
				tc.checkFirst(t, svcs[0])
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{
			name: "a field of the wrong type names the document and kind",
			in:   "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {ports: [{port: eighty}]}\n",
			want: []string{"document 1", "Service shop/web", "port"},
		},
		{
			name: "an item of a List names its index",
			in:   `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service"},{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","endpoints":"none"}]}`,
			want: []string{"document 0 items[1]", "(EndpointSlice)"},
		},
		{
			name: "a YAML syntax error",
			in:   "apiVersion: v1\nkind: Service\n---\nkind: [unclosed\n",
			want: []string{"document 1"},
		},
		{
			name: "a document that is not an object",
			in:   "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\n---\n- a\n- b\n",
			want: []string{"document 1 is not a Kubernetes object"},
		},
		{
			name: "a case-mismatched field is not matched",
			in:   "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\nspec: {Ports: 7, ports: [{port: x}]}\n",
			want: []string{"document 0 (Service x/a)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svcs, eps, err := Decode(strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("no error; decoded %v %v", svcNames(svcs), sliceNames(eps))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// goldenNode is the node the testdata files are converted for.
func goldenNode() Node {
	return Node{
		Name:      "node-a",
		Zone:      "zone-a",
		Addresses: addrs("198.18.0.2", "2001:db8::2"),
		Families:  []proxier.Family{proxier.IPv4, proxier.IPv6},
	}
}

// TestTestdata decodes each testdata file, converts it for goldenNode, and
// compares a text form of the State with the file's .golden (go test -update
// rewrites them).
func TestTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/*.[yj][as][mo]*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			svcs, eps, err := Decode(r)
			if err != nil {
				t.Fatal(err)
			}
			n := goldenNode()
			state, skipped := Convert(Input{Services: svcs, Slices: eps, Node: n})
			if err := state.Validate(&proxier.Config{Families: n.Families}); err != nil {
				t.Fatal(err)
			}
			got := dump(state, skipped)
			golden := strings.TrimSuffix(f, filepath.Ext(f)) + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), got); d != "" {
				t.Errorf("%s (-want +got):\n%s", golden, d)
			}
		})
	}
}

// dump is a State and what was skipped as sorted text.
func dump(s proxier.State, skipped []Skipped) string {
	var b strings.Builder
	fmt.Fprintf(&b, "node addresses %v nodePortCIDRs %v\n", s.Node.Addresses, s.Node.NodePortCIDRs)
	ids := make([]string, 0, len(s.Services))
	for id := range s.Services {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		v := s.Services[id]
		p := v.Ports[0]
		fmt.Fprintf(&b, "%s: %s port %d nodePort %d\n", id, protocolName(p.Protocol), p.Port, p.NodePort)
		line := func(name string, v any, show bool) {
			if show {
				fmt.Fprintf(&b, "  %s %v\n", name, v)
			}
		}
		line("clusterIPs", v.ClusterIPs, len(v.ClusterIPs) > 0)
		line("externalIPs", v.ExternalIPs, len(v.ExternalIPs) > 0)
		line("loadBalancerIPs", v.LoadBalancerIPs, len(v.LoadBalancerIPs) > 0)
		line("sourceRanges", v.LoadBalancerSourceRanges, len(v.LoadBalancerSourceRanges) > 0)
		line("externalTrafficPolicy", v.ExternalTrafficPolicy, v.ExternalTrafficPolicy != proxier.Cluster)
		line("internalTrafficPolicy", v.InternalTrafficPolicy, v.InternalTrafficPolicy != proxier.Cluster)
		line("healthCheckNodePort", v.HealthCheckNodePort, v.HealthCheckNodePort != 0)
		if v.SessionAffinity != nil {
			line("sessionAffinity", v.SessionAffinity.Timeout, true)
		}
		for _, e := range v.Endpoints {
			fmt.Fprintf(&b, "  endpoint %v", netip.AddrPortFrom(e.Addr, uint16(e.Ports[p.Name])))
			for _, c := range []struct {
				name string
				on   bool
			}{{"ready", e.Ready}, {"serving", e.Serving}, {"terminating", e.Terminating}, {"local", e.Local}} {
				if c.on {
					b.WriteString(" " + c.name)
				}
			}
			b.WriteString("\n")
		}
	}
	for _, sk := range skipped {
		fmt.Fprintf(&b, "skipped %s\n", sk)
	}
	return b.String()
}
