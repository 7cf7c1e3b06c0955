package agent

import (
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ipvskit/ipvskit/proxier"
)

// ipvs.excludeCIDRs, read with host bits cleared, become the Proxier's
// ExcludeCIDRs.
func TestExcludeCIDRsReachTheProxier(t *testing.T) {
	c, err := LoadConfig(strings.NewReader("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n" +
		"ipvs:\n  excludeCIDRs: [198.18.9.7/24, \"2001:db8:9::/48\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{o: Options{Config: c}, log: slog.New(slog.DiscardHandler)}
	cfg, err := a.proxierConfig(&corev1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("198.18.9.0/24"), netip.MustParsePrefix("2001:db8:9::/48")}
	if !slices.Equal(cfg.ExcludeCIDRs, want) {
		t.Errorf("proxier.Config.ExcludeCIDRs = %v, want %v", cfg.ExcludeCIDRs, want)
	}
}

// A Service VIP inside ipvs.excludeCIDRs is left out of the State (and
// said so); the Service's other VIPs, and other Services, are served.
func TestDropExcludedLeavesTheRestServed(t *testing.T) {
	ports := []proxier.Port{{Protocol: proxier.TCP, Port: 80}}
	st := proxier.State{Services: map[string]proxier.Service{
		"default/web:http": {ClusterIPs: []netip.Addr{netip.MustParseAddr("198.18.128.1")}, Ports: ports,
			ExternalIPs:     []netip.Addr{netip.MustParseAddr("198.18.9.5"), netip.MustParseAddr("198.18.102.1")},
			LoadBalancerIPs: []netip.Addr{netip.MustParseAddr("198.18.9.6")}},
		"default/in:http": {ClusterIPs: []netip.Addr{netip.MustParseAddr("198.18.9.1")}, Ports: ports},
	}}
	skipped := dropExcluded(&st, []netip.Prefix{netip.MustParsePrefix("198.18.9.0/24")})
	var got []string
	for _, s := range skipped {
		got = append(got, s.String())
	}
	want := []string{
		"default/in:http: cluster IP 198.18.9.1 is inside ipvs.excludeCIDRs 198.18.9.0/24: not served",
		"default/web:http: external IP 198.18.9.5 is inside ipvs.excludeCIDRs 198.18.9.0/24: not served",
		"default/web:http: load-balancer IP 198.18.9.6 is inside ipvs.excludeCIDRs 198.18.9.0/24: not served",
	}
	if !slices.Equal(got, want) {
		t.Errorf("skipped:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	web := st.Services["default/web:http"]
	if len(web.ClusterIPs) != 1 || !slices.Equal(web.ExternalIPs, []netip.Addr{netip.MustParseAddr("198.18.102.1")}) || len(web.LoadBalancerIPs) != 0 {
		t.Errorf("web after dropping: %+v", web)
	}
	if err := st.Validate(&proxier.Config{ExcludeCIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.9.0/24")}}); err != nil {
		t.Errorf("the State left is refused: %v", err)
	}
}
