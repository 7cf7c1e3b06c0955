package lbd

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

// TestMetrics: the kernel's counters of the daemon's virtual servers and
// real servers (and not another program's), and the real servers' health.
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	d, fakes, _, _ := daemonOnFakes(t, farm)
	foreign := ipvs.Service{Protocol: proxier.TCP, Addr: netip.MustParseAddr("198.18.200.1"), Port: 80, Scheduler: "rr"}
	if err := fakes.IPVS.AddService(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	k := ipvs.ServiceKey{Family: proxier.IPv4, Protocol: proxier.TCP, Addr: netip.MustParseAddr("198.18.100.1"), Port: 80}
	fakes.IPVS.SetStats(k, nil, ipvs.Stats{Connections: 7, BytesIn: 700})
	fakes.IPVS.SetStats(k, &ipvs.DestinationKey{Addr: netip.MustParseAddr("198.18.1.1"), Port: 8080}, ipvs.Stats{Connections: 5})
	fakes.IPVS.SetConns(k, ipvs.DestinationKey{Addr: netip.MustParseAddr("198.18.1.1"), Port: 8080}, 2, 1, 0)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	d.m = m
	if err := RegisterStats(reg, fakes.IPVS, d.Config, d.log); err != nil {
		t.Fatal(err)
	}
	d.event(ctx, Event{Key: Key{"web", netip.MustParseAddrPort("198.18.1.2:8080")}})
	want := `
# HELP ipvskit_lb_real_server_up Whether the real server's health check says up (1) or down (0).
# TYPE ipvskit_lb_real_server_up gauge
ipvskit_lb_real_server_up{real_server="198.18.1.2:8080",virtual_server="web"} 0
# HELP ipvskit_lb_virtual_server_connections_total Connections scheduled. (IPVS, per virtual server)
# TYPE ipvskit_lb_virtual_server_connections_total counter
ipvskit_lb_virtual_server_connections_total{vip="tcp 198.18.100.1:80",virtual_server="web"} 7
ipvskit_lb_virtual_server_connections_total{vip="udp 198.18.100.2:53",virtual_server="dns"} 0
# HELP ipvskit_lb_real_server_active_connections Established connections to the real server (IPVS).
# TYPE ipvskit_lb_real_server_active_connections gauge
ipvskit_lb_real_server_active_connections{real_server="198.18.1.1:8080",vip="tcp 198.18.100.1:80",virtual_server="web"} 2
ipvskit_lb_real_server_active_connections{real_server="198.18.1.2:8080",vip="tcp 198.18.100.1:80",virtual_server="web"} 0
ipvskit_lb_real_server_active_connections{real_server="198.18.1.5:53",vip="udp 198.18.100.2:53",virtual_server="dns"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ipvskit_lb_real_server_up", "ipvskit_lb_virtual_server_connections_total", "ipvskit_lb_real_server_active_connections"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.requests); n != 1 {
		t.Errorf("requests counter: %d series", n)
	}
}
