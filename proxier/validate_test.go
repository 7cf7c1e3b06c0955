package proxier

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipvs"
)

var (
	a   = netip.MustParseAddr
	pfx = netip.MustParsePrefix
)

func validState() State {
	return State{
		Node: Node{Addresses: []netip.Addr{a("198.18.0.10"), a("2001:db8::10")}},
		Services: map[string]Service{
			"web": {
				ClusterIPs: []netip.Addr{a("198.18.100.1"), a("2001:db8:100::1")},
				Ports: []Port{
					{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080, NodePort: 30080},
					{Name: "dns", Protocol: UDP, Port: 53},
				},
				ExternalIPs:              []netip.Addr{a("198.18.200.1")},
				LoadBalancerIPs:          []netip.Addr{a("198.18.201.1")},
				LoadBalancerSourceRanges: []netip.Prefix{pfx("198.18.50.0/24")},
				SessionAffinity:          &SessionAffinity{},
				ExternalTrafficPolicy:    Local,
				Scheduler:                "mh",
				SchedulerFlags:           ipvs.MHFallback | ipvs.MHPort,
				HealthCheckNodePort:      30500,
				Endpoints: []Endpoint{
					{Addr: a("198.18.1.1"), Ready: true, Local: true, Ports: map[string]int{"http": 8081}},
					{Addr: a("2001:db8:1::1"), Serving: true, Terminating: true},
				},
			},
			"db": {
				ClusterIPs: []netip.Addr{a("198.18.100.2")},
				Ports:      []Port{{Protocol: SCTP, Port: 5432}},
			},
		},
	}
}

var dualStack = &Config{Families: []Family{IPv4, IPv6}}

func TestValidStatePasses(t *testing.T) {
	s := validState()
	if err := s.Validate(dualStack); err != nil {
		t.Fatal(err)
	}
	if err := dualStack.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidationNamesEveryProblemWithPathAndValue(t *testing.T) {
	s := validState()
	web := s.Services["web"]
	web.Ports = append(web.Ports,
		Port{Name: "bad", Protocol: inet.ICMP, Port: 0, NodePort: 70000},
		Port{Name: "http", Protocol: TCP, Port: 443, TargetPort: -1, NodePort: 30080},
	)
	web.ClusterIPs = append(web.ClusterIPs, a("198.18.100.9"))
	web.ExternalIPs = append(web.ExternalIPs, a("198.18.0.10"), a("127.0.0.1"), a("::ffff:198.18.3.3"))
	web.LoadBalancerSourceRanges = append(web.LoadBalancerSourceRanges, pfx("198.18.50.1/24"))
	web.SessionAffinity = &SessionAffinity{Timeout: 1500 * time.Millisecond}
	web.Scheduler = "fastest"
	web.HealthCheckNodePort = 30080
	web.Endpoints = append(web.Endpoints,
		Endpoint{Addr: a("0.0.0.0")},
		Endpoint{Addr: a("198.18.1.2"), Ports: map[string]int{"nope": 80, "http": 0}},
	)
	s.Services["web"] = web
	s.Services["dup"] = Service{
		ClusterIPs: []netip.Addr{a("198.18.100.1")}, // web's cluster IP, same port and protocol
		Ports:      []Port{{Name: "x", Protocol: TCP, Port: 80}, {Name: "x", Protocol: TCP, Port: 81}, {Protocol: TCP, Port: 82}, {Name: "y", Protocol: inet.UDPLite, Port: 83}},
		Scheduler:  "rr", SchedulerFlags: ipvs.SHPort,
	}
	s.Services["v6only"] = Service{ClusterIPs: []netip.Addr{a("2001:db8:100::7")}, Ports: []Port{{Protocol: TCP, Port: 80}}}
	s.Services["onnode"] = Service{ClusterIPs: []netip.Addr{a("198.18.0.10")}, Ports: []Port{{Protocol: TCP, Port: 81}}}

	err := s.Validate(&Config{}) // IPv4 only
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`services["web"].ports[2].nodePort: 70000 out of range 0-65535`,
		`services["web"].ports[2].protocol: icmp is not TCP, UDP or SCTP`,
		`services["dup"].ports[3].protocol: udplite is not TCP, UDP or SCTP`,
		`services["web"].ports[2].port: 0 out of range 1-65535`,
		`services["web"].ports[3].name: "http" is also the name of ports[0]`,
		`services["web"].ports[3].targetPort: -1 out of range 0-65535`,
		`services["web"].ports[3].nodePort: 30080 is already used for TCP by services["web"].ports[0].nodePort`,
		`services["web"].clusterIPs[1]: 2001:db8:100::1 is IPv6, which the config does not enable`,
		`services["web"].clusterIPs[2]: 198.18.100.9 is a second IPv4 cluster IP`,
		`services["onnode"].clusterIPs[0]: 198.18.0.10 equals a node address`, // an external IP may (externalIPs[1])
		`services["web"].externalIPs[2]: 127.0.0.1 is not a usable VIP`,
		`services["web"].externalIPs[3]: ::ffff:198.18.3.3 is an IPv4-mapped IPv6 address`,
		`services["web"].loadBalancerSourceRanges[1]: 198.18.50.1/24 has host bits set (want 198.18.50.0/24)`,
		`services["web"].sessionAffinity.timeout: 1.5s is not a whole number of seconds`,
		`services["web"].scheduler: "fastest" is not an IPVS scheduler`,
		`services["web"].healthCheckNodePort: 30080 is already used for TCP by services["web"].ports[0].nodePort`,
		`services["web"].endpoints[1].addr: 2001:db8:1::1 is IPv6, which the config does not enable`,
		`services["web"].endpoints[2].addr: 0.0.0.0 is not a unicast address`,
		`services["web"].endpoints[3].ports["http"]: 0 out of range 1-65535`,
		`services["web"].endpoints[3].ports["nope"]: names no port of the service`,
		`services["web"].ports[0]: 198.18.100.1:80/TCP is already served by services["dup"].ports[0]`,
		`services["dup"].ports[1].name: "x" is also the name of ports[0]`,
		`services["dup"].ports[2].name: "" is empty in a service with several ports`,
		`services["dup"].schedulerFlags: flag-2 are only meaningful for the sh and mh schedulers, not "rr"`,
		`services["v6only"].clusterIPs[0]: 2001:db8:100::7 is IPv6, which the config does not enable`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("full error:\n%s", msg)
	}
	if len(ve.Problems) != 25 {
		t.Errorf("%d problems, want exactly the 25 above:\n%s", len(ve.Problems), msg)
	}
	// The order is stable: the same input gives the same error text.
	if again := s.Validate(&Config{}); again.Error() != msg {
		t.Error("validation order is not stable")
	}
}

func TestConfigValidation(t *testing.T) {
	bit := 32
	c := &Config{
		LinkName:      "a-very-long-link-name",
		Backend:       Backend(9),
		MasqueradeBit: &bit,
		Families:      []Family{IPv4, IPv4, Family(5)},
		LocalDetector: LocalDetector{ClusterCIDRs: []netip.Prefix{pfx("198.18.0.1/16"), pfx("198.19.0.0/16")}, Interface: "eth/0"},
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{
		`config.linkName: "a-very-long-link-name" is not a valid interface name: longer than 15 bytes`,
		`config.backend: Backend(9) is not NFTables or IPTables`,
		`config.masqueradeBit: 32 out of range 0-31`,
		`config.families[1]: IPv4 is listed twice`,
		`config.families[2]: Family(5) is not IPv4 or IPv6`,
		`config.localDetector: sets more than one of`,
		`config.localDetector.clusterCIDRs[0]: 198.18.0.1/16 has host bits set`,
		`config.localDetector.interface: "eth/0" is not a valid interface name: contains '/'`,
		`config.localDetector.clusterCIDRs[1]: 198.19.0.0/16 is a second IPv4 cluster CIDR`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if err := (&Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
}

// Names that reach the kernel or the rules are checked as strictly as the
// clients check them, at New, before anything is touched.
func TestConfigNames(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string // "" means valid
	}{
		{Config{Instance: "lb-a"}, ""},
		{Config{Instance: "Kube"}, `config.instance: "Kube" is not a valid instance name`},
		{Config{Instance: "kube"}, `config.instance: "kube" is not a valid instance name: reserved`},
		{Config{Instance: "docker"}, `config.instance: "docker" is not a valid instance name: reserved`},
		{Config{Instance: "filter"}, `config.instance: "filter" is not a valid instance name: reserved`},
		{Config{Instance: "abcdefghijklm"}, `config.instance: "abcdefghijklm" is not a valid instance name: longer than 12 bytes`},
		{Config{LinkName: "kube-ipvs0"}, `config.linkName: "kube-ipvs0" is kube-proxy's VIP link: name it only with KubeProxyNames`},
		{Config{LinkName: "kube-ipvs0", KubeProxyNames: true}, ""},
		{Config{LinkName: "vip\x00"}, `config.linkName: "vip\x00" is not a valid interface name: contains '\x00'`},
		{Config{LinkName: "vip\r"}, `config.linkName: "vip\r" is not a valid interface name: contains '\r'`},
		{Config{LinkName: ".."}, `config.linkName: ".." is not a valid interface name`},
		{Config{LocalDetector: LocalDetector{Interface: "veth+"}}, `config.localDetector.interface: "veth+" contains '+'`},
		{Config{LocalDetector: LocalDetector{Interface: `eth"0`}}, `config.localDetector.interface: "eth\"0" contains '"'`},
		{Config{LocalDetector: LocalDetector{InterfacePrefix: "veth+"}}, `config.localDetector.interfacePrefix: "veth+" contains '+'`},
		{Config{LocalDetector: LocalDetector{InterfacePrefix: "cali\n"}}, `config.localDetector.interfacePrefix: "cali\n" is not a valid interface name: contains '\n'`},
		{Config{LocalDetector: LocalDetector{InterfacePrefix: "abcdefghijklmno"}}, `config.localDetector.interfacePrefix: "abcdefghijklmno" is longer than 14 bytes`},
		{Config{LocalDetector: LocalDetector{InterfacePrefix: "cali"}}, ""},
	} {
		err := tc.c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: got %v, want %q", tc.c, err, tc.want)
		}
	}
}
