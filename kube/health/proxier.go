package health

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ipvskit/ipvskit/proxier"
)

// ToBeDeletedTaint is the taint the cluster autoscaler puts on a node it is
// about to delete.
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// DefaultTimeout is ProxyConfig.Timeout's default: kube-proxy's, twice its
// default sync period of 30s.
const DefaultTimeout = 60 * time.Second

// readHeaderTimeout bounds how long a client may take to send its request
// headers, so that idle connections do not pile up on ports open to
// anyone who can reach the node.
const readHeaderTimeout = 10 * time.Second

// ProxyConfig configures a ProxyHealth. The zero value is usable.
type ProxyConfig struct {
	// Timeout is how long a queued update may wait for a successful sync
	// before the proxy is unhealthy; zero means DefaultTimeout. kube-proxy
	// uses twice its sync period.
	Timeout time.Duration
	// Families are the IP families the proxier serves, each reported in
	// the JSON "status" as kube-proxy reports its per-family proxiers;
	// empty means IPv4 only.
	Families []proxier.Family
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Probed, when set, is called for each answer to /healthz or /livez,
	// before it is sent, with the path and the status code (for kube-proxy's
	// kubeproxy_proxy_healthz_total and kubeproxy_proxy_livez_total; see
	// the metrics package's Metrics.Probed). It must not block.
	Probed func(path string, code int)
}

// ProxyHealth is the health of the proxy, served on /healthz and /livez.
// Its methods are safe for concurrent use.
type ProxyHealth struct {
	timeout  time.Duration
	families []string
	now      func() time.Time
	probed   func(string, int)

	mu          sync.Mutex
	lastUpdated time.Time
	queued      time.Time // when the oldest update not yet synced was queued
	pending     bool      // whether queued is set
	eligible    bool
}

// NewProxyHealth returns a healthy ProxyHealth on an eligible node, last
// updated now (kube-proxy marks itself updated when its sync loop starts).
// A nil cfg means the defaults.
func NewProxyHealth(cfg *ProxyConfig) *ProxyHealth {
	if cfg == nil {
		cfg = &ProxyConfig{}
	}
	h := &ProxyHealth{timeout: cfg.Timeout, now: cfg.Now, probed: cfg.Probed, eligible: true}
	if h.timeout <= 0 {
		h.timeout = DefaultTimeout
	}
	if h.now == nil {
		h.now = time.Now
	}
	for _, f := range []proxier.Family{proxier.IPv4, proxier.IPv6} {
		for _, g := range cfg.Families {
			if f == g {
				h.families = append(h.families, f.String())
				break
			}
		}
	}
	if len(h.families) == 0 {
		h.families = []string{proxier.IPv4.String()}
	}
	h.lastUpdated = h.now()
	return h
}

// QueuedUpdate records that a change arrived that needs a sync: an update
// to a Service or an EndpointSlice. The proxy turns unhealthy if no
// Updated follows within the timeout of the first such call.
func (h *ProxyHealth) QueuedUpdate() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.pending {
		h.queued, h.pending = h.now(), true
	}
}

// Updated records a successful sync: everything queued so far is applied.
func (h *ProxyHealth) Updated() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastUpdated, h.pending = h.now(), false
}

// SyncNode sets whether the node is eligible for traffic, usually
// NodeEligible of the node's latest version. While it is not, /healthz
// answers 503; /livez and the service health checks are unaffected. A new
// ProxyHealth starts eligible.
func (h *ProxyHealth) SyncNode(eligible bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.eligible = eligible
}

// Healthy reports whether no update has waited for a sync for the
// timeout or longer. It is what /livez answers and what the service
// health checks report as serviceProxyHealthy.
func (h *ProxyHealth) Healthy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.healthyAt(h.now())
}

func (h *ProxyHealth) healthyAt(now time.Time) bool {
	return !h.pending || now.Sub(h.queued) < h.timeout
}

// NodeEligible reports whether node may receive traffic: it exists, is
// not being deleted and has no ToBeDeletedTaint. This is kube-proxy's
// rule for /healthz.
func NodeEligible(node *corev1.Node) bool {
	if node == nil || node.DeletionTimestamp != nil {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == ToBeDeletedTaint {
			return false
		}
	}
	return true
}

// proxyStatus is the JSON body of /healthz and /livez, as kube-proxy
// writes it.
type proxyStatus struct {
	// LastUpdated is the last successful sync, or the current time when
	// the answer is 200 (kube-proxy keeps this for older clients).
	LastUpdated  time.Time               `json:"lastUpdated"`
	CurrentTime  time.Time               `json:"currentTime"`
	NodeEligible *bool                   `json:"nodeEligible,omitempty"` // /healthz only
	Healthy      bool                    `json:"healthy"`
	Status       map[string]familyStatus `json:"status,omitempty"`
}

type familyStatus struct {
	LastUpdated time.Time `json:"lastUpdated"`
	Healthy     bool      `json:"healthy"`
}

// Handler serves /healthz and /livez; other paths are not found.
func (h *ProxyHealth) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { h.answer(w, "/healthz", true) })
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { h.answer(w, "/livez", false) })
	return mux
}

func (h *ProxyHealth) answer(w http.ResponseWriter, path string, withNode bool) {
	h.mu.Lock()
	now := h.now()
	st := proxyStatus{LastUpdated: h.lastUpdated, CurrentTime: now, Healthy: h.healthyAt(now),
		Status: make(map[string]familyStatus, len(h.families))}
	for _, f := range h.families {
		st.Status[f] = familyStatus{LastUpdated: h.lastUpdated, Healthy: st.Healthy}
	}
	ok := st.Healthy
	if withNode {
		eligible := h.eligible
		st.NodeEligible = &eligible
		ok = ok && eligible
	}
	h.mu.Unlock()

	code := http.StatusServiceUnavailable
	if ok {
		code = http.StatusOK
		st.LastUpdated = now
	}
	body, err := json.Marshal(st)
	if err != nil {
		// Only a time outside years 0-9999 fails to marshal.
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if h.probed != nil {
		h.probed(path, code)
	}
	writeJSON(w, code, body)
}

// writeJSON writes body with kube-proxy's headers.
func writeJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// Serve listens on addr (host:port, as kube-proxy's
// --healthz-bind-address, default 0.0.0.0:10256) and serves Handler until
// ctx is done, then closes the listener and any open connections and
// returns nil. It returns an error if it cannot listen or serving fails.
func (h *ProxyHealth) Serve(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("health: proxy health on %s: %w", addr, err)
	}
	return serve(ctx, h.Handler(), ln)
}

// serve serves handler on ln until ctx is done.
func serve(ctx context.Context, handler http.Handler, ln net.Listener) error {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: readHeaderTimeout}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("health: proxy health on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
		_ = srv.Close()
		<-done
		return nil
	}
}
