// Package kubeproxybench drives the kube-proxy comparison of cmd/kpbench: one
// cluster model (ClusterIP Services with ready endpoints on another node) and
// the changes made to it, written both as the Services and EndpointSlices
// that kube-proxy's real IPVS proxier reads (through bench/kubeproxy, the
// oracle) and as the proxier.State that ipvskit's proxier syncs; a fresh node
// namespace per side and run; and the strace counting of what each side asks
// of the kernel.
package kubeproxybench

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/ipvskit/ipvskit/proxier"
)

// The node's facts, the same for both sides. Every address is from
// 198.18.0.0/15 (RFC 2544, benchmarking): the node on 198.18.0.0/24, cluster
// IPs from 198.18.128.0/17, endpoints from 198.19.0.0/16.
const (
	Namespace = "bench"
	NodeName  = "node-a" // this node
	OtherNode = "node-b" // where every endpoint runs, so none is local
	NodeLink  = "eth0"
)

var (
	NodeIP      = netip.MustParsePrefix("198.18.0.10/24")
	vipBase     = netip.MustParseAddr("198.18.128.1")
	epBase      = netip.MustParseAddr("198.19.0.1")
	epCount     = 65534 - 256 // 198.19.0.1 .. 198.19.254.255; 198.19.255.0/24 is for added endpoints
	addedBase   = netip.MustParseAddr("198.19.255.1")
	maxVIPs     = 32767 - 1
	servicePort = 80
	targetPort  = 8080
)

// offset is the i-th address counted from base.
func offset(base netip.Addr, i int) netip.Addr {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(i)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Service is one ClusterIP Service of the model: TCP port "http" 80 to the
// endpoints' port 8080.
type Service struct {
	Name      string
	VIP       netip.Addr
	Endpoints []netip.Addr
}

// Model is the cluster both sides are told about.
type Model struct {
	Services  []Service
	endpoints int
	next      int // endpoint addresses handed out so far
}

// NewModel makes services Services with endpoints ready endpoints each.
// Endpoint addresses are handed out in order from 198.19.0.1 and wrap after
// about 65,000, so at 10,000 x 10 services far apart share backends' addresses
// (neither proxier cares: only addresses within one service must differ).
func NewModel(services, endpoints int) (*Model, error) {
	if services < 1 || endpoints < 1 || endpoints > 250 {
		return nil, fmt.Errorf("want 1 or more services with 1-250 endpoints, have %d x %d", services, endpoints)
	}
	if services+16 > maxVIPs {
		return nil, fmt.Errorf("at most %d services fit in 198.18.128.0/17", maxVIPs-16)
	}
	m := &Model{endpoints: endpoints}
	for i := range services {
		m.Services = append(m.Services, m.newService(fmt.Sprintf("svc-%d", i), i))
	}
	return m, nil
}

func (m *Model) newService(name string, vip int) Service {
	s := Service{Name: name, VIP: offset(vipBase, vip)}
	for range m.endpoints {
		s.Endpoints = append(s.Endpoints, offset(epBase, m.next%epCount))
		m.next++
	}
	return s
}

// Op is one of the measured changes after the initial sync.
type Op int

const (
	EndpointAdded   Op = iota // service 0 gets one more ready endpoint
	EndpointRemoved           // service 1+round loses its first endpoint
	ServiceAdded              // a new service like the others
	NoChange                  // a sync with nothing changed (kube-proxy's periodic resync)
)

// Ops are the changes in the order they are made.
var Ops = []Op{EndpointAdded, EndpointRemoved, ServiceAdded, NoChange}

func (o Op) String() string {
	switch o {
	case EndpointAdded:
		return "one endpoint added"
	case EndpointRemoved:
		return "one endpoint removed"
	case ServiceAdded:
		return "one service added"
	case NoChange:
		return "no-op sync"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Apply makes the change o; round tells changes of the same kind apart on
// one node (0 for the first).
func (m *Model) Apply(o Op, round int) {
	switch o {
	case EndpointAdded:
		s := &m.Services[0]
		s.Endpoints = append(s.Endpoints, offset(addedBase, round))
	case EndpointRemoved:
		s := &m.Services[(1+round)%len(m.Services)]
		if len(s.Endpoints) > 1 {
			s.Endpoints = s.Endpoints[1:]
		}
	case ServiceAdded:
		n := len(m.Services)
		m.Services = append(m.Services, m.newService(fmt.Sprintf("new-%d", round), n))
	}
}

// ID is the proxier.State ID of a service's one port, as kube/convert names
// it.
func ID(s Service) string { return Namespace + "/" + s.Name + ":http" }

// State is the model as ipvskit's proxier.State.
func (m *Model) State() *proxier.State {
	st := &proxier.State{
		Services: make(map[string]proxier.Service, len(m.Services)),
		Node:     proxier.Node{Addresses: []netip.Addr{NodeIP.Addr()}},
	}
	for _, s := range m.Services {
		eps := make([]proxier.Endpoint, len(s.Endpoints))
		for j, a := range s.Endpoints {
			eps[j] = proxier.Endpoint{Addr: a, Ready: true, Serving: true, Ports: map[string]int{"http": targetPort}}
		}
		st.Services[ID(s)] = proxier.Service{
			ClusterIPs: []netip.Addr{s.VIP},
			Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: servicePort}},
			Endpoints:  eps,
		}
	}
	return st
}

// objects is one Service and its EndpointSlice as the API server returns
// them (`kubectl get svc,endpointslices -o json`), with the fields the API
// server fills in that kube-proxy reads.
var objects = template.Must(template.New("objects").Parse(`{"apiVersion":"v1","kind":"Service",
 "metadata":{"name":"{{.Name}}","namespace":"` + Namespace + `"},
 "spec":{"type":"ClusterIP","clusterIP":"{{.VIP}}","clusterIPs":["{{.VIP}}"],
  "ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","sessionAffinity":"None","internalTrafficPolicy":"Cluster",
  "ports":[{"name":"http","protocol":"TCP","port":` + fmt.Sprint(servicePort) + `,"targetPort":` + fmt.Sprint(targetPort) + `}]}},
{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
 "metadata":{"name":"{{.Name}}-x1","namespace":"` + Namespace + `","labels":{"kubernetes.io/service-name":"{{.Name}}"}},
 "addressType":"IPv4",
 "ports":[{"name":"http","protocol":"TCP","port":` + fmt.Sprint(targetPort) + `}],
 "endpoints":[{{range $i, $a := .Endpoints}}{{if $i}},{{end}}
  {"addresses":["{{$a}}"],"conditions":{"ready":true,"serving":true,"terminating":false},"nodeName":"` + OtherNode + `"}{{end}}]}`))

// WriteObjects writes the model as one JSON List of Services and
// EndpointSlices (JSON rather than YAML: the oracle decodes it several times
// faster, which matters at 10,000 services under emulation; either is what
// kubectl writes).
func (m *Model) WriteObjects(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := io.WriteString(bw, `{"apiVersion":"v1","kind":"List","items":[`+"\n"); err != nil {
		return err
	}
	for i, s := range m.Services {
		if i > 0 {
			bw.WriteString(",\n")
		}
		if err := objects.Execute(bw, s); err != nil {
			return err
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// Replace writes the model to file in one rename, as the oracle wants a
// replaced file (it watches for the rename).
func (m *Model) Replace(file string) error {
	tmp := filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".new")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := m.WriteObjects(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// Sizes parses a comma-separated list of service counts.
func Sizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no sizes in %q", s)
	}
	return out, nil
}
