package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
)

// kubeadmConfig is the shape of the config.conf kubeadm writes into the
// kube-proxy ConfigMap: every field, most at their zero value.
const kubeadmConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
bindAddressHardFail: false
clientConnection:
  acceptContentTypes: ""
  burst: 0
  contentType: ""
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: 198.18.64.0/18
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
  tcpBeLiberal: false
  tcpCloseWaitTimeout: null
  tcpEstablishedTimeout: null
  udpStreamTimeout: 0s
  udpTimeout: 0s
detectLocal:
  bridgeInterface: ""
  interfaceNamePrefix: ""
detectLocalMode: ""
enableProfiling: false
healthzBindAddress: ""
hostnameOverride: ""
iptables:
  localhostNodePorts: null
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
ipvs:
  excludeCIDRs: null
  minSyncPeriod: 0s
  scheduler: ""
  strictARP: false
  syncPeriod: 0s
  tcpFinTimeout: 0s
  tcpTimeout: 0s
  udpTimeout: 0s
kind: KubeProxyConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
metricsBindAddress: ""
mode: ipvs
nftables:
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
nodePortAddresses: null
oomScoreAdj: null
portRange: ""
showHiddenMetricsForVersion: ""
winkernel:
  enableDSR: false
  forwardHealthCheckVip: false
  networkName: ""
  rootHnsEndpointName: ""
  sourceVip: ""
`

func TestLoadConfigReadsKubeadmsFileWithKubeProxysDefaults(t *testing.T) {
	c, err := LoadConfig(strings.NewReader(kubeadmConfig))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Kubeconfig: "/var/lib/kube-proxy/kubeconfig.conf", QPS: 5, Burst: 10,
		ContentType:        "application/vnd.kubernetes.protobuf",
		HealthzBindAddress: "0.0.0.0:10256", MetricsBindAddress: "127.0.0.1:10249",
		SyncPeriod: 30 * time.Second, ConfigSyncPeriod: 15 * time.Minute,
		MasqueradeBit: 14, DetectLocalMode: DetectClusterCIDR,
		ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.64.0/18")},
	}
	if c.Ignored != nil || c.Unknown != nil {
		t.Errorf("a kubeadm file with nothing set but what applies: ignored %q, unknown %q", c.Ignored, c.Unknown)
	}
	c.Ignored, c.Unknown = nil, nil
	if diff := compareConfig(c, want); diff != "" {
		t.Fatal(diff)
	}
}

func compareConfig(got, want *Config) string {
	g, w := *got, *want
	g.Ignored, w.Ignored, g.Unknown, w.Unknown = nil, nil, nil, nil
	if !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("got  %+v\nwant %+v", g, w)
	}
	return ""
}

func TestLoadConfigAppliesTheIPVSFields(t *testing.T) {
	c, err := LoadConfig(strings.NewReader(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
hostnameOverride: node-a
healthzBindAddress: 127.0.0.1
metricsBindAddress: "[::1]:9999"
ipvs:
  scheduler: mh
  strictARP: true
  syncPeriod: 1m
  minSyncPeriod: 2s
  tcpTimeout: 900s
  tcpFinTimeout: 30s
  udpTimeout: 10s
  excludeCIDRs: [198.18.9.0/24]
iptables:
  masqueradeAll: true
  masqueradeBit: 10
detectLocalMode: InterfaceNamePrefix
detectLocal:
  interfaceNamePrefix: veth
nodePortAddresses: [198.18.0.0/24, "2001:db8::/64"]
configSyncPeriod: 5m
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		HostnameOverride: "node-a", QPS: 5, Burst: 10, ContentType: "application/vnd.kubernetes.protobuf",
		HealthzBindAddress: "127.0.0.1:10256", MetricsBindAddress: "[::1]:9999",
		SyncPeriod: time.Minute, MinSyncPeriod: 2 * time.Second, ConfigSyncPeriod: 5 * time.Minute,
		Scheduler: "mh", StrictARP: true,
		Timeouts:      ipvs.Timeouts{TCP: 900 * time.Second, TCPFin: 30 * time.Second, UDP: 10 * time.Second},
		ExcludeCIDRs:  []netip.Prefix{netip.MustParsePrefix("198.18.9.0/24")},
		MasqueradeAll: true, MasqueradeBit: 10,
		DetectLocalMode: DetectInterfaceNamePrefix, InterfaceNamePrefix: "veth",
		NodePortAddresses: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24"), netip.MustParsePrefix("2001:db8::/64")},
	}
	if diff := compareConfig(c, want); diff != "" {
		t.Fatal(diff)
	}
}

func TestLoadConfigNamesWhatItIgnores(t *testing.T) {
	c, err := LoadConfig(strings.NewReader(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
featureGates: {SomeGate: true}
conntrack:
  maxPerCore: 65536
  tcpBeLiberal: true
iptables:
  masqueradeAll: true
  syncPeriod: 10s
oomScoreAdj: -999
portRange: 30000-31000
nftables:
  masqueradeAll: false
ipvsTypo: 1
ipvs:
  schedular: mh
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"conntrack.maxPerCore", "conntrack.tcpBeLiberal", "featureGates.SomeGate", "iptables.syncPeriod",
		"oomScoreAdj", "portRange"}
	if !slices.Equal(c.Ignored, want) {
		t.Errorf("Ignored = %q, want %q (nftables.masqueradeAll is false: not reported)", c.Ignored, want)
	}
	if want := []string{"ipvs.schedular", "ipvsTypo"}; !slices.Equal(c.Unknown, want) {
		t.Errorf("Unknown = %q, want %q", c.Unknown, want)
	}
	if !c.MasqueradeAll {
		t.Error("iptables.masqueradeAll (which IPVS mode uses) not applied")
	}
}

func TestLoadConfigRefusesWhatItCannotUse(t *testing.T) {
	for _, tc := range []struct{ name, body, field string }{
		{"wrong kind", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n", "apiVersion/kind"},
		{"another mode", "mode: nftables\n", "mode"},
		{"unknown scheduler", "ipvs: {scheduler: fastest}\n", "ipvs.scheduler"},
		{"minSyncPeriod over syncPeriod", "ipvs: {syncPeriod: 10s, minSyncPeriod: 20s}\n", "ipvs.minSyncPeriod"},
		{"negative timeout", "ipvs: {tcpTimeout: -1s}\n", "ipvs.tcpTimeout"},
		{"masquerade bit", "iptables: {masqueradeBit: 32}\n", "iptables.masqueradeBit"},
		{"bad cluster CIDR", "clusterCIDR: 198.18.0.0/33\n", "clusterCIDR"},
		{"bad exclude CIDR", "ipvs: {excludeCIDRs: [nope]}\n", "ipvs.excludeCIDRs"},
		{"primary and CIDRs", "nodePortAddresses: [primary, 198.18.0.0/24]\n", "nodePortAddresses"},
		{"bridge without its interface", "detectLocalMode: BridgeInterface\n", "detectLocal.bridgeInterface"},
		{"unknown local mode", "detectLocalMode: Magic\n", "detectLocalMode"},
		{"bad healthz address", "healthzBindAddress: here\n", "healthzBindAddress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if !strings.HasPrefix(body, "apiVersion") {
				body = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n" + body
			}
			_, err := LoadConfig(strings.NewReader(body))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("error %v, want a *ConfigError for %s", err, tc.field)
			}
		})
	}
}

func TestNodePortAddressesPrimary(t *testing.T) {
	c, err := LoadConfig(strings.NewReader("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nnodePortAddresses: [primary]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.NodePortPrimaryOnly || c.NodePortAddresses != nil {
		t.Fatalf("primary: %v %v", c.NodePortPrimaryOnly, c.NodePortAddresses)
	}
}
