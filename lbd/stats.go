package lbd

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipvs"
)

// StatsReader reads IPVS counters: an *ipvs.Client, or ipvstest's Fake.
type StatsReader interface {
	Services(ctx context.Context) ([]ipvs.ServiceInfo, error)
	Destinations(ctx context.Context, k ipvs.ServiceKey) ([]ipvs.DestinationInfo, error)
}

// statsCollector exports the kernel's counters of the virtual servers
// the configuration names and of their destinations, read at each scrape.
type statsCollector struct {
	r    StatsReader
	cfg  func() *Config
	log  *slog.Logger
	vs   map[string]*prometheus.Desc
	rs   map[string]*prometheus.Desc
	conn [2]*prometheus.Desc // active, inactive connections per real server
}

// The counters exported per virtual server and per real server, by the
// suffix of their name.
var statNames = []struct{ name, help string }{
	{"connections_total", "Connections scheduled."},
	{"received_packets_total", "Packets from clients."},
	{"transmitted_packets_total", "Packets to clients."},
	{"received_bytes_total", "Bytes from clients."},
	{"transmitted_bytes_total", "Bytes to clients."},
}

func statValues(s ipvs.Stats) []uint64 {
	return []uint64{s.Connections, s.PacketsIn, s.PacketsOut, s.BytesIn, s.BytesOut}
}

// RegisterStats registers with reg a collector of the IPVS counters that
// r reads for the virtual servers of cfg() and their real servers.
func RegisterStats(reg prometheus.Registerer, r StatsReader, cfg func() *Config, log *slog.Logger) error {
	c := &statsCollector{r: r, cfg: cfg, log: log, vs: map[string]*prometheus.Desc{}, rs: map[string]*prometheus.Desc{}}
	for _, s := range statNames {
		c.vs[s.name] = prometheus.NewDesc("ipvskit_lb_virtual_server_"+s.name, s.help+" (IPVS, per virtual server)", []string{"virtual_server", "vip"}, nil)
		c.rs[s.name] = prometheus.NewDesc("ipvskit_lb_real_server_"+s.name, s.help+" (IPVS, per real server)", []string{"virtual_server", "vip", "real_server"}, nil)
	}
	c.conn[0] = prometheus.NewDesc("ipvskit_lb_real_server_active_connections", "Established connections to the real server (IPVS).", []string{"virtual_server", "vip", "real_server"}, nil)
	c.conn[1] = prometheus.NewDesc("ipvskit_lb_real_server_inactive_connections", "Connections to the real server in other states (IPVS).", []string{"virtual_server", "vip", "real_server"}, nil)
	return reg.Register(c)
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range statNames {
		ch <- c.vs[s.name]
		ch <- c.rs[s.name]
	}
	ch <- c.conn[0]
	ch <- c.conn[1]
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	names := serviceKeys(c.cfg())
	svcs, err := c.r.Services(ctx)
	if err != nil {
		c.log.Warn("reading IPVS counters", "error", err)
		return
	}
	for _, s := range svcs {
		name, ok := names[s.Key()]
		if !ok {
			continue // not ours
		}
		vip := s.Key().String()
		for i, v := range statValues(s.Stats) {
			ch <- prometheus.MustNewConstMetric(c.vs[statNames[i].name], prometheus.CounterValue, float64(v), name, vip)
		}
		dests, err := c.r.Destinations(ctx, s.Key())
		if err != nil {
			c.log.Warn("reading IPVS counters", "virtualServer", name, "error", err)
			continue
		}
		for _, d := range dests {
			rs := ipvsDest(d.Destination)
			for i, v := range statValues(d.Stats) {
				ch <- prometheus.MustNewConstMetric(c.rs[statNames[i].name], prometheus.CounterValue, float64(v), name, vip, rs)
			}
			ch <- prometheus.MustNewConstMetric(c.conn[0], prometheus.GaugeValue, float64(d.ActiveConns), name, vip, rs)
			ch <- prometheus.MustNewConstMetric(c.conn[1], prometheus.GaugeValue, float64(d.InactiveConns), name, vip, rs)
		}
	}
}

func ipvsDest(d ipvs.Destination) string {
	return netip.AddrPortFrom(d.Addr, d.Port).String()
}

// serviceKeys are the IPVS virtual servers of cfg's virtual servers.
func serviceKeys(cfg *Config) map[ipvs.ServiceKey]string {
	out := map[ipvs.ServiceKey]string{}
	for name, vs := range cfg.VirtualServers {
		fam := inet.FamilyOf(vs.Address)
		if vs.FirewallMark != 0 {
			out[ipvs.ServiceKey{Family: fam, FWMark: vs.FirewallMark}] = name
			continue
		}
		for _, p := range vs.Ports {
			out[ipvs.ServiceKey{Family: fam, Protocol: vs.Protocol, Addr: vs.Address, Port: uint16(p)}] = name
		}
	}
	return out
}
