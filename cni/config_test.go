package cni

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ipvskit/ipvskit/proxier"
)

const goodConf = `{
	"cniVersion": "1.0.0", "name": "net", "type": "ipvskit",
	"backend": "iptables", "vipMode": "local-routes", "instance": "sandbox",
	"services": [
		{"name": "web", "vip": "198.18.100.1", "port": 80, "targetPort": 8080, "backends": ["198.18.1.1", "198.18.1.2"], "scheduler": "wrr"},
		{"vip": "2001:db8::100", "port": 53, "protocol": "UDP", "backends": ["2001:db8::1"]}
	],
	"prevResult": {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": "/run/netns/x"}],
		"ips": [{"address": "198.18.0.2/24", "interface": 0}]}
}`

func TestParseMapsTheStanzaOntoAStateAndConfig(t *testing.T) {
	conf, err := Parse([]byte(goodConf))
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr
	want := &proxier.State{Services: map[string]proxier.Service{
		"web": {
			ClusterIPs: []netip.Addr{a("198.18.100.1")},
			Ports:      []proxier.Port{{Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
			Scheduler:  "wrr",
			Endpoints: []proxier.Endpoint{
				{Addr: a("198.18.1.1"), Ready: true, Serving: true},
				{Addr: a("198.18.1.2"), Ready: true, Serving: true},
			},
		},
		"[2001:db8::100]:53/udp": {
			ClusterIPs: []netip.Addr{a("2001:db8::100")},
			Ports:      []proxier.Port{{Protocol: proxier.UDP, Port: 53}},
			Endpoints:  []proxier.Endpoint{{Addr: a("2001:db8::1"), Ready: true, Serving: true}},
		},
	}}
	if diff := cmp.Diff(want, conf.State(), cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("State (-want +got):\n%s", diff)
	}
	wantCfg := &proxier.Config{Instance: "sandbox", Backend: proxier.IPTables, VIPMode: proxier.VIPLocalRoutes,
		Families: []proxier.Family{proxier.IPv4, proxier.IPv6}}
	if diff := cmp.Diff(wantCfg, conf.ProxierConfig(), cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
		t.Errorf("ProxierConfig (-want +got):\n%s", diff)
	}
	prev, err := current.GetResult(conf.PrevResult)
	if err != nil {
		t.Fatal(err)
	}
	if len(prev.IPs) != 1 || prev.IPs[0].Address.String() != "198.18.0.2/24" {
		t.Errorf("prevResult: got %+v, want the previous plugin's IP", prev.IPs)
	}
}

func TestParseDefaults(t *testing.T) {
	conf, err := Parse([]byte(`{"cniVersion": "1.0.0", "name": "n", "type": "ipvskit",
		"services": [{"vip": "198.18.100.1", "port": 80, "backends": []}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := conf.ProxierConfig()
	if cfg.Backend != proxier.NFTables || cfg.VIPMode != proxier.VIPAddresses || cfg.Instance != "" ||
		len(cfg.Families) != 1 || cfg.Families[0] != proxier.IPv4 {
		t.Errorf("ProxierConfig = %+v, want nftables, addresses, the default instance, IPv4 only", cfg)
	}
	svc, ok := conf.State().Services["198.18.100.1:80/tcp"]
	if !ok || svc.Ports[0].Protocol != proxier.TCP || svc.Scheduler != "" || len(svc.Endpoints) != 0 {
		t.Errorf("State = %+v, want one TCP service by its VIP:port/protocol, no endpoints", conf.State())
	}
	if conf.PrevResult != nil {
		t.Errorf("PrevResult = %v, want none", conf.PrevResult)
	}
}

// TestParseRefuses: each malformed stanza is a *types.Error with the code
// the CNI spec gives it, naming the field and the value.
func TestParseRefuses(t *testing.T) {
	const head = `"cniVersion": "1.0.0", "name": "n", "type": "ipvskit"`
	svc := func(s string) string { return `{` + head + `, "services": [` + s + `]}` }
	for _, tc := range []struct {
		name, conf string
		code       uint
		want       []string // in the message
	}{
		{"not JSON", `{"cniVersion": "1.0.0", `, types.ErrDecodingFailure, []string{"decoding"}},
		{"a port as a string", svc(`{"vip": "198.18.100.1", "port": "80"}`), types.ErrDecodingFailure, []string{"port"}},
		{"no services", `{` + head + `}`, types.ErrInvalidNetworkConfig, []string{"services: at least one"}},
		{"a bad VIP", svc(`{"vip": "198.18.300.1", "port": 80}`), types.ErrInvalidNetworkConfig,
			[]string{`services[0].vip: "198.18.300.1" is not an IP address`}},
		{"port 0", svc(`{"vip": "198.18.100.1", "port": 0}`), types.ErrInvalidNetworkConfig,
			[]string{`services[0].port: "0" is out of range 1-65535`}},
		{"a target port too big", svc(`{"vip": "198.18.100.1", "port": 80, "targetPort": 70000}`), types.ErrInvalidNetworkConfig,
			[]string{`services[0].targetPort: "70000"`}},
		{"icmp", svc(`{"vip": "198.18.100.1", "port": 80, "protocol": "icmp"}`), types.ErrInvalidNetworkConfig,
			[]string{`services[0].protocol: "icmp" is not tcp, udp or sctp`}},
		{"a bad backend", svc(`{"vip": "198.18.100.1", "port": 80, "backends": ["198.18.1.1", "nope"]}`), types.ErrInvalidNetworkConfig,
			[]string{`services[0].backends[1]: "nope" is not an IP address`}},
		{"a backend of the other family", svc(`{"vip": "198.18.100.1", "port": 80, "backends": ["2001:db8::1"]}`),
			types.ErrInvalidNetworkConfig, []string{`services[0].backends[0]: "2001:db8::1" is not of the VIP's family`}},
		{"a misspelt key", svc(`{"vip": "198.18.100.1", "port": 80, "backend": ["198.18.1.1"]}`), types.ErrInvalidNetworkConfig,
			[]string{`services[0]: unknown field "backend"`}},
		{"two names alike", svc(`{"name": "a", "vip": "198.18.100.1", "port": 80}, {"name": "a", "vip": "198.18.100.2", "port": 80}`),
			types.ErrInvalidNetworkConfig, []string{`services[1].name: "a" names services[0] too`}},
		{"a back end", `{` + head + `, "backend": "ipvs", "services": [{"vip": "198.18.100.1", "port": 80}]}`,
			types.ErrInvalidNetworkConfig, []string{`backend: "ipvs" is not nftables or iptables`}},
		{"a VIP mode", `{` + head + `, "vipMode": "arp", "services": [{"vip": "198.18.100.1", "port": 80}]}`,
			types.ErrInvalidNetworkConfig, []string{`vipMode: "arp" is not addresses or local-routes`}},
		{"every problem at once", svc(`{"vip": "x", "port": 0}`), types.ErrInvalidNetworkConfig,
			[]string{`services[0].vip: "x"`, `services[0].port: "0"`}},
		// What the proxier refuses, in its words.
		{"a loopback VIP", svc(`{"vip": "127.0.0.1", "port": 80}`), types.ErrInvalidNetworkConfig, []string{"127.0.0.1"}},
		{"one VIP:port twice", svc(`{"vip": "198.18.100.1", "port": 80}, {"name": "b", "vip": "198.18.100.1", "port": 80}`),
			types.ErrInvalidNetworkConfig, []string{"198.18.100.1"}},
		{"an instance name", `{` + head + `, "instance": "kube-x", "services": [{"vip": "198.18.100.1", "port": 80}]}`,
			types.ErrInvalidNetworkConfig, []string{"config.instance", "kube-x"}},
		{"a bad prevResult", `{` + head + `, "services": [{"vip": "198.18.100.1", "port": 80}], "prevResult": {"ips": 3}}`,
			types.ErrDecodingFailure, []string{"prevResult"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := Parse([]byte(tc.conf))
			var ce *types.Error
			if !errors.As(err, &ce) {
				t.Fatalf("Parse = %+v, %v; want a *types.Error", conf, err)
			}
			if ce.Code != tc.code {
				t.Errorf("code %d, want %d (%v)", ce.Code, tc.code, ce)
			}
			for _, w := range tc.want {
				if !strings.Contains(ce.Msg, w) {
					t.Errorf("message %q lacks %q", ce.Msg, w)
				}
			}
		})
	}
}
