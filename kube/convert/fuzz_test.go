package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
)

// FuzzConvert feeds Decode anything; whatever it accepts must convert, for
// any node, to a State that passes Validate.
func FuzzConvert(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.[yj][as][mo]*")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "node-a", "zone-a", uint8(3))
	}
	for _, s := range []string{
		"apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\nspec: {clusterIP: 198.18.100.1, ports: [{port: 80, nodePort: 30000}], type: NodePort}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\nspec: {clusterIP: 198.18.0.2, externalIPs: [198.18.0.2, '::ffff:198.19.0.1'], ports: [{port: 80}]}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\nspec: {clusterIP: 2001:db8::9, ipFamilies: [IPv6], clusterIPs: [2001:db8::9], type: LoadBalancer, externalTrafficPolicy: Local, healthCheckNodePort: 30000, loadBalancerSourceRanges: ['::/0', 198.18.0.0/15], ports: [{port: 80, nodePort: 30000}]}\nstatus: {loadBalancer: {ingress: [{ip: 2001:db8::10}]}}\n",
		// An external IP on a node address at another Service's node port.
		"apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\nspec: {clusterIP: 198.18.100.1, type: NodePort, ports: [{port: 80, nodePort: 30000}]}\n---\n" +
			"apiVersion: v1\nkind: Service\nmetadata: {name: b, namespace: x}\nspec: {clusterIP: 198.18.100.2, externalIPs: [198.18.0.2], ports: [{port: 30000}]}\n",
		"addressType: IPv4\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: a-1, namespace: x, labels: {kubernetes.io/service-name: a}}\nports: [{name: '', port: 8080}]\nendpoints: [{addresses: [198.18.1.1], nodeName: node-a, hints: {forZones: [{name: zone-a}]}}]\n",
	} {
		f.Add([]byte(s), "node-a", "zone-a", uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, nodeName, zone string, bits uint8) {
		svcs, eps, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		n := Node{Name: nodeName, Zone: zone, Addresses: addrs("198.18.0.2", "2001:db8::2", "127.0.0.1")}
		if bits&1 != 0 {
			n.Families = append(n.Families, proxier.IPv4)
		}
		if bits&2 != 0 {
			n.Families = append(n.Families, proxier.IPv6)
		}
		if bits&4 != 0 {
			n.NodePortCIDRs = prefixes("198.18.0.0/24")
		}
		state, _ := Convert(Input{Services: svcs, Slices: eps, Node: n})
		if err := state.Validate(&proxier.Config{Families: n.Families}); err != nil {
			t.Fatalf("Convert made an invalid State: %v", err)
		}
	})
}
