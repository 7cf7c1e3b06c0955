package convert_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/ipvskit/ipvskit/kube/convert"
	"github.com/ipvskit/ipvskit/proxier"
)

// A LoadBalancer Service with two ports, one EndpointSlice that lists only
// one of them, and a headless Service, converted for node-a.
func Example() {
	const objects = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  type: LoadBalancer
  clusterIP: 198.18.100.10
  clusterIPs: [198.18.100.10]
  ipFamilies: [IPv4]
  externalTrafficPolicy: Local
  healthCheckNodePort: 32000
  ports:
  - {name: http, protocol: TCP, port: 80, targetPort: 8080, nodePort: 30080}
  - {name: metrics, protocol: TCP, port: 9090, targetPort: 9090, nodePort: 30090}
status:
  loadBalancer:
    ingress:
    - {ip: 198.19.0.1, ipMode: VIP}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abcde
  namespace: shop
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports:
- {name: http, protocol: TCP, port: 8080}
endpoints:
- addresses: [198.18.1.5]
  conditions: {ready: true}
  nodeName: node-a
- addresses: [198.18.2.7]
  conditions: {ready: true}
  nodeName: node-b
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec:
  clusterIP: None
  ports:
  - {name: pg, port: 5432}
`
	svcs, eps, err := convert.Decode(strings.NewReader(objects))
	if err != nil {
		panic(err)
	}
	node := convert.Node{
		Name:      "node-a",
		Addresses: []netip.Addr{netip.MustParseAddr("198.18.0.2")},
	}
	state, skipped := convert.Convert(convert.Input{Services: svcs, Slices: eps, Node: node})
	if err := state.Validate(&proxier.Config{Families: node.Families}); err != nil {
		panic(err)
	}

	ids := make([]string, 0, len(state.Services))
	for id := range state.Services {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s := state.Services[id]
		p := s.Ports[0]
		fmt.Printf("%s: %s %v:%d lb %v node port %d, external %v, health check %d\n",
			id, p.Protocol, s.ClusterIPs, p.Port, s.LoadBalancerIPs, p.NodePort, s.ExternalTrafficPolicy, s.HealthCheckNodePort)
		for _, e := range s.Endpoints {
			fmt.Printf("  %v:%d ready=%v local=%v\n", e.Addr, e.Ports[p.Name], e.Ready, e.Local)
		}
	}
	for _, sk := range skipped {
		fmt.Println("skipped", sk)
	}
	// Output:
	// shop/web:http: tcp [198.18.100.10]:80 lb [198.19.0.1] node port 30080, external Local, health check 32000
	//   198.18.1.5:8080 ready=true local=true
	//   198.18.2.7:8080 ready=true local=false
	// shop/web:metrics: tcp [198.18.100.10]:9090 lb [198.19.0.1] node port 30090, external Local, health check 0
	// skipped shop/db: headless (clusterIP None): kube-proxy does not proxy it
}
