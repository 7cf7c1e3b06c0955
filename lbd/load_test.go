package lbd

import (
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

func load(t *testing.T, path string) *Config {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(data)
	if err != nil {
		t.Fatalf("Load: %s", errString(err))
	}
	return cfg
}

func TestLoadMapsOntoState(t *testing.T) {
	cfg := load(t, "testdata/lb.yaml")
	s := cfg.State(nil)
	ip := netip.MustParseAddr
	want := map[string]proxier.Service{
		"web": {
			ClusterIPs:      []netip.Addr{ip("198.18.100.1")},
			Ports:           []proxier.Port{{Protocol: proxier.TCP, Port: 80}},
			Scheduler:       "wrr",
			SessionAffinity: &proxier.SessionAffinity{Timeout: 600 * time.Second, IPv4PrefixLen: 24},
			Endpoints: []proxier.Endpoint{
				{Addr: ip("198.18.1.1"), Ports: map[string]int{"": 8080}, Ready: true, Weight: 3},
				{Addr: ip("198.18.1.2"), Ports: map[string]int{"": 8080}, Ready: true},
				{Addr: ip("198.18.1.3"), Ports: map[string]int{"": 8080}, Ready: true, UpperThreshold: 100},
			},
		},
		"mail": {
			ClusterIPs:      []netip.Addr{ip("198.18.100.2")},
			FirewallMark:    7,
			Ports:           []proxier.Port{{Name: "port-25", Protocol: proxier.TCP, Port: 25}, {Name: "port-587", Protocol: proxier.TCP, Port: 587}},
			Scheduler:       "sh",
			SessionAffinity: &proxier.SessionAffinity{},
			Forward:         ipvs.DirectRoute,
			Endpoints: []proxier.Endpoint{
				{Addr: ip("198.18.1.10"), Ready: true},
				{Addr: ip("198.18.1.11"), Ready: true, Quiesced: true},
			},
		},
	}
	if diff := cmp.Diff(want, s.Services, addrs); diff != "" {
		t.Errorf("State (-want +got):\n%s", diff)
	}
	if err := s.Validate(cfg.ProxierConfig()); err != nil {
		t.Errorf("Validate: %v", err)
	}
	targets := cfg.targets()
	web3 := targets[Key{"web", netip.MustParseAddrPort("198.18.1.3:8080")}]
	if web3.Check.Type != CheckTCP || web3.Check.Interval != time.Second || web3.Check.Fall != 2 || web3.Check.Timeout != time.Second {
		t.Errorf("web's third real server's check = %+v, want its own tcp check, 1s, fall 2", web3.Check)
	}
	mail := targets[Key{"mail", netip.MustParseAddrPort("198.18.1.10:0")}]
	if mail.Addr != netip.MustParseAddrPort("198.18.1.10:25") {
		t.Errorf("mail's check goes to %v, want the check's port 25", mail.Addr)
	}
	if len(targets) != 5 {
		t.Errorf("%d targets, want 5", len(targets))
	}
}

// TestLoadRefusesWithEveryProblemAndLine: problems of form (found while
// reading) and of value (the State's validation, named by the file's
// paths) are all reported, each on its line.
func TestLoadRefusesWithEveryProblemAndLine(t *testing.T) {
	file := `virtualServers:
  web:
    address: 198.18.100.1
    port: 80
    colour: blue
    healthCheck: {type: tcp, interval: 1s, timeout: 2s}
    realServers:
      - {address: 198.18.1.1, weight: 70000}
      - {address: 198.18.1.x}
      - {address: 198.18.1.3, lowerThreshold: 10}
  web2:
    address: 198.18.100.1
    port: 80
    forward: DR
    realServers:
      - {address: 198.18.1.4, port: 8080}
  udp:
    address: 198.18.100.3
    port: 53
    protocol: udp
    healthCheck: {type: dns}
    realServers:
      - address: 2001:db8::1
`
	_, err := Load([]byte(file))
	var v *proxier.ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("Load = %v, want a *proxier.ValidationError", err)
	}
	want := map[string]int{ // path -> line
		`virtualServers["web"].colour`:                 5,
		`virtualServers["web"].healthCheck.timeout`:    6,
		`virtualServers["web"].realServers[0].weight`:  8,
		`virtualServers["web"].realServers[1].address`: 9,
		`virtualServers["udp"].healthCheck.dnsName`:    21,
	}
	got := map[string]int{}
	for _, p := range v.Problems {
		got[p.Path] = p.Line
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems of form (-want +got):\n%s\n%s", diff, errString(err))
	}

	// With the form right, the State's own validation speaks.
	file = strings.NewReplacer("    colour: blue\n", "", "timeout: 2s", "timeout: 1s", "weight: 70000", "weight: 2",
		"198.18.1.x", "198.18.1.2", "{type: dns}", "{type: dns, dnsName: example.org}").Replace(file)
	_, err = Load([]byte(file))
	if !errors.As(err, &v) {
		t.Fatalf("Load = %v, want a *proxier.ValidationError", err)
	}
	want = map[string]int{
		`virtualServers["web"].realServers[2].lowerThreshold`: 9,
		`virtualServers["web2"].realServers[0].port`:          15,
		`virtualServers["udp"].realServers[0].address`:        22,
	}
	got = map[string]int{}
	for _, p := range v.Problems {
		if p.Path == `virtualServers["web2"]` || strings.HasPrefix(p.Path, `virtualServers["web2"].port`) {
			continue // the VIP:port both claim: reported at one of them
		}
		got[p.Path] = p.Line
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems of value (-want +got):\n%s\n%s", diff, errString(err))
	}
	if !strings.Contains(errString(err), "198.18.100.1") {
		t.Errorf("the VIP:port claimed twice is not named:\n%s", errString(err))
	}
}

func TestLoadRefusesSyntax(t *testing.T) {
	_, err := Load([]byte("virtualServers: [\n"))
	var v *proxier.ValidationError
	if !errors.As(err, &v) || len(v.Problems) != 1 {
		t.Fatalf("Load = %v, want one problem", err)
	}
}

var addrs = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })
