package health

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// ServiceConfig configures a ServiceHealth. The zero value is usable.
type ServiceConfig struct {
	// Addrs are the addresses each health-check port listens on.
	// kube-proxy listens on the node's addresses within
	// --nodeport-addresses, or on all addresses when that is unset. Empty
	// means all addresses of both families (one wildcard listener per
	// port).
	Addrs []netip.Addr
	// Proxy is the proxy's health: while it is not Healthy, every health
	// check answers 503 with serviceProxyHealthy false. Nil means always
	// healthy.
	Proxy *ProxyHealth
	// Listen opens each listener, e.g. in the node's network namespace
	// when the program runs in another; nil means net.Listen.
	Listen func(network, address string) (net.Listener, error)
}

// ServiceHealth serves the health-check node ports of Services with
// externalTrafficPolicy Local: a load balancer probes each node's port and
// sends the Service's traffic only to nodes that answer 200, those with a
// local endpoint. Services are named by types.NamespacedName. Its methods
// are safe for concurrent use.
type ServiceHealth struct {
	addrs  []netip.Addr
	proxy  *ProxyHealth
	listen func(network, address string) (net.Listener, error)

	mu        sync.RWMutex
	servers   map[types.NamespacedName]*server
	endpoints map[types.NamespacedName]int
	closed    bool
}

// server is one Service's health check: one HTTP server on a listener per
// address.
type server struct {
	port int
	srv  *http.Server
	lns  []net.Listener
}

// NewServiceHealth returns a ServiceHealth serving no Service. A nil cfg
// means the defaults.
func NewServiceHealth(cfg *ServiceConfig) *ServiceHealth {
	if cfg == nil {
		cfg = &ServiceConfig{}
	}
	listen := cfg.Listen
	if listen == nil {
		listen = net.Listen
	}
	return &ServiceHealth{
		addrs:     slices.Clone(cfg.Addrs),
		proxy:     cfg.Proxy,
		listen:    listen,
		servers:   make(map[types.NamespacedName]*server),
		endpoints: make(map[types.NamespacedName]int),
	}
}

// SyncServices makes ports, each Service's health-check port, the set
// served: it closes the ports of Services no longer in ports or whose port
// changed, and opens those not open yet. A port that cannot be opened (in
// use, out of range) is left closed and reported in the error, which joins
// one error per Service naming it and its port and wrapping the cause (a
// *net.OpError for a listen failure); the other Services are served all
// the same, and the next SyncServices tries the failed ones again. After
// Close it returns an error wrapping net.ErrClosed.
func (s *ServiceHealth) SyncServices(ports map[types.NamespacedName]int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("health: SyncServices: %w", net.ErrClosed)
	}
	for name, srv := range s.servers {
		if port, ok := ports[name]; !ok || port != srv.port {
			srv.close()
			delete(s.servers, name)
		}
	}
	var errs []error
	for _, name := range sortedNames(ports) {
		if s.servers[name] != nil {
			continue
		}
		port := ports[name]
		srv, err := s.open(name, port)
		if err != nil {
			errs = append(errs, fmt.Errorf("health: service %s: health-check port %d: %w", name, port, err))
			continue
		}
		s.servers[name] = srv
	}
	return errors.Join(errs...)
}

// SyncEndpoints sets the number of ready endpoints each Service has on
// this node; a Service not in counts has none.
func (s *ServiceHealth) SyncEndpoints(counts map[types.NamespacedName]int) {
	m := maps.Clone(counts)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endpoints = m
}

// Close closes every health-check port. The ServiceHealth serves nothing
// afterwards.
func (s *ServiceHealth) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for name, srv := range s.servers {
		errs = append(errs, srv.close())
		delete(s.servers, name)
	}
	s.closed = true
	return errors.Join(errs...)
}

// open listens on port on every address and starts serving name's health
// check there. If one address fails, it closes those already open.
func (s *ServiceHealth) open(name types.NamespacedName, port int) (*server, error) {
	if port < 1 || port > 65535 {
		return nil, errors.New("port out of range")
	}
	addrs := []string{":" + strconv.Itoa(port)}
	if len(s.addrs) > 0 {
		addrs = addrs[:0]
		for _, a := range s.addrs {
			addrs = append(addrs, netip.AddrPortFrom(a, uint16(port)).String())
		}
	}
	srv := &server{port: port, srv: &http.Server{Handler: s.handler(name), ReadHeaderTimeout: readHeaderTimeout}}
	for _, addr := range addrs {
		ln, err := s.listen("tcp", addr)
		if err != nil {
			_ = srv.close()
			return nil, err
		}
		srv.lns = append(srv.lns, ln)
	}
	for _, ln := range srv.lns {
		go func() { _ = srv.srv.Serve(ln) }()
	}
	return srv, nil
}

// close closes the listeners, so the port is free when it returns, and
// the connections being served.
func (srv *server) close() error {
	var errs []error
	for _, ln := range srv.lns {
		errs = append(errs, ln.Close())
	}
	// The listeners are closed already; Close closes the connections.
	_ = srv.srv.Close()
	return errors.Join(errs...)
}

// serviceStatus is the JSON body of a health check, as kube-proxy writes
// it.
type serviceStatus struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

// handler answers name's health check on any path: 200 while it has a
// local endpoint and the proxy is healthy, 503 otherwise.
// X-Load-Balancing-Endpoint-Weight is the number of local endpoints.
func (s *ServiceHealth) handler(name types.NamespacedName) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var st serviceStatus
		st.Service.Namespace, st.Service.Name = name.Namespace, name.Name
		s.mu.RLock()
		st.LocalEndpoints = s.endpoints[name]
		s.mu.RUnlock()
		st.ServiceProxyHealthy = s.proxy == nil || s.proxy.Healthy()

		// kube-proxy indents with tabs and ends without a newline.
		body, _ := json.MarshalIndent(st, "", "\t")
		w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(st.LocalEndpoints))
		code := http.StatusServiceUnavailable
		if st.LocalEndpoints > 0 && st.ServiceProxyHealthy {
			code = http.StatusOK
		}
		writeJSON(w, code, body)
	})
}

func sortedNames(m map[types.NamespacedName]int) []types.NamespacedName {
	return slices.SortedFunc(maps.Keys(m), func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}
