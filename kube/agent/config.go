package agent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"time"

	kpv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/ipvskit/ipvskit/ipvs"
)

// The KubeProxyConfiguration version LoadConfig reads.
const (
	ConfigAPIVersion = "kubeproxy.config.k8s.io/v1alpha1"
	ConfigKind       = "KubeProxyConfiguration"
)

// Local-traffic detection modes (KubeProxyConfiguration.detectLocalMode).
const (
	DetectClusterCIDR         = "ClusterCIDR"
	DetectNodeCIDR            = "NodeCIDR"
	DetectBridgeInterface     = "BridgeInterface"
	DetectInterfaceNamePrefix = "InterfaceNamePrefix"
)

// NodePortPrimary is the nodePortAddresses value that means the node's
// primary IPs (the Node's first InternalIP of each family).
const NodePortPrimary = "primary"

// Config is what the agent takes from a KubeProxyConfiguration, with
// kube-proxy's defaults for what the file leaves out.
type Config struct {
	// HostnameOverride is the node's name; empty means the host name.
	HostnameOverride string
	// Kubeconfig, QPS, Burst and ContentType are clientConnection's.
	Kubeconfig  string
	QPS         float32
	Burst       int
	ContentType string
	// HealthzBindAddress and MetricsBindAddress are host:port; empty
	// serves nothing.
	HealthzBindAddress string
	MetricsBindAddress string
	// SyncPeriod, MinSyncPeriod are ipvs.syncPeriod and ipvs.minSyncPeriod;
	// ConfigSyncPeriod is the informers' resync.
	SyncPeriod       time.Duration
	MinSyncPeriod    time.Duration
	ConfigSyncPeriod time.Duration
	// Scheduler is ipvs.scheduler, the default for Services without the
	// scheduler annotation; empty means "rr".
	Scheduler string
	StrictARP bool
	// Timeouts are ipvs.tcpTimeout, tcpFinTimeout and udpTimeout; 0 leaves
	// the kernel's value.
	Timeouts ipvs.Timeouts
	// ExcludeCIDRs is ipvs.excludeCIDRs (host bits cleared, as kube-proxy
	// reads them), the Proxier's ExcludeCIDRs: virtual servers there are
	// never the agent's, even on kube-ipvs0 or once its own. A Service's
	// VIP there is not served (logged as not served as asked), and node
	// addresses there carry no node ports.
	ExcludeCIDRs []netip.Prefix
	// MasqueradeAll and MasqueradeBit are iptables.masqueradeAll and
	// iptables.masqueradeBit, which kube-proxy's IPVS mode uses.
	MasqueradeAll bool
	MasqueradeBit int
	// DetectLocalMode, ClusterCIDRs, BridgeInterface and
	// InterfaceNamePrefix say how pod traffic is told from the rest.
	DetectLocalMode     string
	ClusterCIDRs        []netip.Prefix
	BridgeInterface     string
	InterfaceNamePrefix string
	// NodePortAddresses are the prefixes of the node addresses that serve
	// node ports; empty means all; NodePortPrimaryOnly is "primary".
	NodePortAddresses   []netip.Prefix
	NodePortPrimaryOnly bool

	// Ignored lists, by field path, the fields the file sets to something
	// other than their zero value that the agent does not apply.
	Ignored []string
	// Unknown lists, by path, the fields the file has that
	// KubeProxyConfiguration does not (kube-proxy warns about them and
	// goes on; so does the agent).
	Unknown []string
}

// DefaultConfig is the Config of an empty KubeProxyConfiguration.
func DefaultConfig() *Config {
	c, err := configFrom(&kpv1alpha1.KubeProxyConfiguration{}, nil)
	if err != nil {
		panic(err) // the zero configuration is valid
	}
	return c
}

// ConfigError is a KubeProxyConfiguration field with a value the agent
// cannot use.
type ConfigError struct {
	Field string // its path, as in the file: "ipvs.scheduler"
	Value string
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("KubeProxyConfiguration: %s: %q: %v", e.Field, e.Value, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// LoadConfig reads a KubeProxyConfiguration, YAML or JSON, as kube-proxy's
// --config does.
func LoadConfig(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("KubeProxyConfiguration: %w", err)
	}
	var kp kpv1alpha1.KubeProxyConfiguration
	if err := yaml.Unmarshal(j, &kp); err != nil {
		return nil, fmt.Errorf("KubeProxyConfiguration: %w", err)
	}
	if kp.APIVersion != ConfigAPIVersion || kp.Kind != ConfigKind {
		return nil, &ConfigError{Field: "apiVersion/kind", Value: kp.APIVersion + "/" + kp.Kind,
			Err: fmt.Errorf("want %s/%s", ConfigAPIVersion, ConfigKind)}
	}
	var raw map[string]any
	if err := yaml.Unmarshal(j, &raw); err != nil {
		return nil, fmt.Errorf("KubeProxyConfiguration: %w", err)
	}
	c, err := configFrom(&kp, raw)
	if err != nil {
		return nil, err
	}
	c.Unknown = unknownFields(raw)
	c.Ignored = slices.DeleteFunc(c.Ignored, func(f string) bool {
		return slices.ContainsFunc(c.Unknown, func(u string) bool { return f == u || strings.HasPrefix(f, u+".") })
	})
	return c, nil
}

// unknownFields are the paths of the fields in raw that
// KubeProxyConfiguration does not have (kube-proxy warns about them).
func unknownFields(raw map[string]any) []string {
	var out []string
	var walk func(path string, v any, t reflect.Type)
	walk = func(path string, v any, t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		m, ok := v.(map[string]any)
		if !ok || t.Kind() != reflect.Struct {
			return // a value, or a map type such as featureGates: any key
		}
		fields := jsonFields(t)
		for k, e := range m {
			p := k
			if path != "" {
				p = path + "." + k
			}
			ft, ok := fields[k]
			if !ok {
				out = append(out, p)
				continue
			}
			walk(p, e, ft)
		}
	}
	walk("", raw, reflect.TypeFor[kpv1alpha1.KubeProxyConfiguration]())
	slices.Sort(out)
	return out
}

// jsonFields maps a struct's JSON field names to their types, with the
// fields of embedded structs (TypeMeta) inlined.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// applied are the fields the agent applies (paths in the file), and those
// it reads only to check them.
var applied = []string{
	"apiVersion", "kind", "mode",
	"hostnameOverride", "healthzBindAddress", "metricsBindAddress", "bindAddress",
	"clientConnection.kubeconfig", "clientConnection.qps", "clientConnection.burst",
	"clientConnection.contentType", "clientConnection.acceptContentTypes",
	"ipvs.scheduler", "ipvs.strictARP", "ipvs.tcpTimeout", "ipvs.tcpFinTimeout", "ipvs.udpTimeout",
	"ipvs.excludeCIDRs", "ipvs.syncPeriod", "ipvs.minSyncPeriod",
	"iptables.masqueradeAll", "iptables.masqueradeBit",
	"clusterCIDR", "detectLocalMode", "detectLocal.bridgeInterface", "detectLocal.interfaceNamePrefix",
	"nodePortAddresses", "configSyncPeriod",
}

func configFrom(kp *kpv1alpha1.KubeProxyConfiguration, raw map[string]any) (*Config, error) {
	if kp.Mode != "" && kp.Mode != "ipvs" {
		return nil, &ConfigError{Field: "mode", Value: string(kp.Mode), Err: errors.New("ipvskit-proxy is kube-proxy's IPVS mode: leave it empty or \"ipvs\"")}
	}
	cc := kp.ClientConnection
	c := &Config{
		HostnameOverride: strings.TrimSpace(kp.HostnameOverride),
		Kubeconfig:       cc.Kubeconfig,
		QPS:              orF(cc.QPS, 5),
		Burst:            int(orI(cc.Burst, 10)),
		ContentType:      or(cc.ContentType, "application/vnd.kubernetes.protobuf"),
		SyncPeriod:       orD(kp.IPVS.SyncPeriod.Duration, 30*time.Second),
		MinSyncPeriod:    kp.IPVS.MinSyncPeriod.Duration,
		ConfigSyncPeriod: orD(kp.ConfigSyncPeriod.Duration, 15*time.Minute),
		Scheduler:        kp.IPVS.Scheduler,
		StrictARP:        kp.IPVS.StrictARP,
		Timeouts: ipvs.Timeouts{TCP: kp.IPVS.TCPTimeout.Duration, TCPFin: kp.IPVS.TCPFinTimeout.Duration,
			UDP: kp.IPVS.UDPTimeout.Duration},
		MasqueradeAll:       kp.IPTables.MasqueradeAll,
		MasqueradeBit:       14,
		DetectLocalMode:     or(string(kp.DetectLocalMode), DetectClusterCIDR),
		BridgeInterface:     kp.DetectLocal.BridgeInterface,
		InterfaceNamePrefix: kp.DetectLocal.InterfaceNamePrefix,
	}
	if kp.IPTables.MasqueradeBit != nil {
		c.MasqueradeBit = int(*kp.IPTables.MasqueradeBit)
	}
	var err error
	bind := or(kp.BindAddress, "0.0.0.0")
	if c.HealthzBindAddress, err = bindAddress("healthzBindAddress", kp.HealthzBindAddress, wildcard(bind), 10256); err != nil {
		return nil, err
	}
	if c.MetricsBindAddress, err = bindAddress("metricsBindAddress", kp.MetricsBindAddress, loopback(bind), 10249); err != nil {
		return nil, err
	}
	if err := c.check(kp); err != nil {
		return nil, err
	}
	c.Ignored = ignored(raw)
	return c, nil
}

func (c *Config) check(kp *kpv1alpha1.KubeProxyConfiguration) error {
	durations := []struct {
		field string
		d     time.Duration
	}{
		{"ipvs.syncPeriod", c.SyncPeriod}, {"ipvs.minSyncPeriod", c.MinSyncPeriod},
		{"configSyncPeriod", c.ConfigSyncPeriod}, {"ipvs.tcpTimeout", c.Timeouts.TCP},
		{"ipvs.tcpFinTimeout", c.Timeouts.TCPFin}, {"ipvs.udpTimeout", c.Timeouts.UDP},
	}
	for _, d := range durations {
		if d.d < 0 {
			return &ConfigError{Field: d.field, Value: d.d.String(), Err: errors.New("negative")}
		}
	}
	if c.MinSyncPeriod > c.SyncPeriod {
		return &ConfigError{Field: "ipvs.minSyncPeriod", Value: c.MinSyncPeriod.String(),
			Err: fmt.Errorf("longer than ipvs.syncPeriod %v", c.SyncPeriod)}
	}
	if c.MasqueradeBit < 0 || c.MasqueradeBit > 31 {
		return &ConfigError{Field: "iptables.masqueradeBit", Value: fmt.Sprint(c.MasqueradeBit), Err: errors.New("want 0-31")}
	}
	if c.Scheduler != "" && !slices.Contains(Schedulers, c.Scheduler) {
		return &ConfigError{Field: "ipvs.scheduler", Value: c.Scheduler, Err: fmt.Errorf("not one of %s", strings.Join(Schedulers, ", "))}
	}
	var err error
	if c.ExcludeCIDRs, err = prefixes("ipvs.excludeCIDRs", kp.IPVS.ExcludeCIDRs); err != nil {
		return err
	}
	if kp.ClusterCIDR != "" {
		if c.ClusterCIDRs, err = prefixes("clusterCIDR", strings.Split(kp.ClusterCIDR, ",")); err != nil {
			return err
		}
	}
	for _, a := range kp.NodePortAddresses {
		if a == NodePortPrimary {
			c.NodePortPrimaryOnly = true
			continue
		}
		p, err := prefixes("nodePortAddresses", []string{a})
		if err != nil {
			return err
		}
		c.NodePortAddresses = append(c.NodePortAddresses, p...)
	}
	if c.NodePortPrimaryOnly && len(c.NodePortAddresses) > 0 {
		return &ConfigError{Field: "nodePortAddresses", Value: strings.Join(kp.NodePortAddresses, ","),
			Err: errors.New("\"primary\" cannot be mixed with CIDRs")}
	}
	switch c.DetectLocalMode {
	case DetectClusterCIDR, DetectNodeCIDR:
	case DetectBridgeInterface:
		if c.BridgeInterface == "" {
			return &ConfigError{Field: "detectLocal.bridgeInterface", Err: errors.New("required by detectLocalMode BridgeInterface")}
		}
	case DetectInterfaceNamePrefix:
		if c.InterfaceNamePrefix == "" {
			return &ConfigError{Field: "detectLocal.interfaceNamePrefix", Err: errors.New("required by detectLocalMode InterfaceNamePrefix")}
		}
	default:
		return &ConfigError{Field: "detectLocalMode", Value: c.DetectLocalMode,
			Err: fmt.Errorf("not one of %s, %s, %s, %s", DetectClusterCIDR, DetectNodeCIDR, DetectBridgeInterface, DetectInterfaceNamePrefix)}
	}
	return nil
}

// Schedulers are the IPVS schedulers the kernel has (net/netfilter/ipvs).
var Schedulers = []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh", "twos"}

func prefixes(field string, ss []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range ss {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, &ConfigError{Field: field, Value: s, Err: err}
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// bindAddress reads a bind address as kube-proxy does: an empty one is the
// default host with port, and an IP without a port gets port.
func bindAddress(field, v, host string, port int) (string, error) {
	if v == "" {
		return net.JoinHostPort(host, fmt.Sprint(port)), nil
	}
	if _, _, err := net.SplitHostPort(v); err == nil {
		return v, nil
	}
	a, err := netip.ParseAddr(strings.Trim(v, "[]"))
	if err != nil {
		return "", &ConfigError{Field: field, Value: v, Err: errors.New("want an IP, or IP:port")}
	}
	return netip.AddrPortFrom(a, uint16(port)).String(), nil
}

func wildcard(bind string) string {
	if a, err := netip.ParseAddr(bind); err == nil && a.Is6() {
		return "::"
	}
	return "0.0.0.0"
}

func loopback(bind string) string {
	if a, err := netip.ParseAddr(bind); err == nil && a.Is6() {
		return "::1"
	}
	return "127.0.0.1"
}

// ignored walks the file's fields and returns the paths of those set to a
// non-zero value that are not applied.
func ignored(raw map[string]any) []string {
	var out []string
	var walk func(prefix string, v any)
	walk = func(path string, v any) {
		if slices.Contains(applied, path) {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, e)
			}
			return
		case nil:
			return
		case bool:
			if !x {
				return
			}
		case float64:
			if x == 0 {
				return
			}
		case string:
			if x == "" || x == "0" || x == "0s" {
				return
			}
		case []any:
			if len(x) == 0 {
				return
			}
		}
		out = append(out, path)
	}
	walk("", raw)
	slices.Sort(out)
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orF(v, def float32) float32 {
	if v == 0 {
		return def
	}
	return v
}

func orI(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}

func orD(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}
