package ipvs

import (
	"context"
	"slices"
	"testing"
	"time"
)

// crossCase is one IPVS table written two ways: as Go values and as the
// lines ipvsadm -Sn prints for it.
type crossCase struct {
	name  string
	svc   Service
	dests []Destination
	lines []string
}

var crossCases = []crossCase{
	{
		name: "tcp ipv4 masq",
		svc:  Service{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80, Scheduler: "rr"},
		dests: []Destination{
			{Addr: mustAddr("198.18.1.1"), Port: 8080, Weight: 1},
			{Addr: mustAddr("198.18.1.2"), Port: 8080, Weight: 5},
		},
		lines: []string{
			"-A -t 198.18.0.1:80 -s rr",
			"-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1",
			"-a -t 198.18.0.1:80 -r 198.18.1.2:8080 -m -w 5",
		},
	},
	{
		name: "ipv6 persistence with prefix length, direct routing",
		svc: Service{Protocol: TCP, Addr: mustAddr("2001:db8::1"), Port: 443, Scheduler: "wlc",
			Persistence: Persistence{Timeout: 600 * time.Second, PrefixLen: 64}},
		dests: []Destination{{Addr: mustAddr("2001:db8:1::1"), Port: 443, Forward: DirectRoute, Weight: 3}},
		lines: []string{
			"-A -t [2001:db8::1]:443 -s wlc -p 600 -M 64",
			"-a -t [2001:db8::1]:443 -r [2001:db8:1::1]:443 -g -w 3",
		},
	},
	{
		name: "ipv4 persistence with netmask, udp one-packet",
		svc: Service{Protocol: UDP, Addr: mustAddr("198.18.0.2"), Port: 53, Scheduler: "lc", OnePacket: true,
			Persistence: Persistence{Timeout: 300 * time.Second, PrefixLen: 24}},
		dests: []Destination{{Addr: mustAddr("198.18.1.3"), Port: 53, Weight: 1}},
		lines: []string{
			"-A -u 198.18.0.2:53 -s lc -p 300 -M 255.255.255.0 -o",
			"-a -u 198.18.0.2:53 -r 198.18.1.3:53 -m -w 1",
		},
	},
	{
		name:  "fwmark ipv4",
		svc:   Service{FWMark: 7, Family: IPv4, Scheduler: "wrr"},
		dests: []Destination{{Addr: mustAddr("198.18.1.4"), Forward: DirectRoute, Weight: 2}},
		lines: []string{
			"-A -f 7 -s wrr",
			"-a -f 7 -r 198.18.1.4:0 -g -w 2",
		},
	},
	{
		name:  "fwmark ipv6",
		svc:   Service{FWMark: 8, Family: IPv6, Scheduler: "sh", SchedFlags: SHFallback | SHPort},
		dests: []Destination{{Addr: mustAddr("2001:db8:1::2"), Forward: DirectRoute, Weight: 1}},
		lines: []string{
			"-A -f 8 -6 -s sh -b sh-fallback,sh-port",
			"-a -f 8 -6 -r [2001:db8:1::2]:0 -g -w 1",
		},
	},
	{
		name:  "sctp",
		svc:   Service{Protocol: SCTP, Addr: mustAddr("198.18.0.3"), Port: 3868, Scheduler: "rr"},
		dests: []Destination{{Addr: mustAddr("198.18.1.5"), Port: 3868, Weight: 1}},
		lines: []string{
			"-A --sctp-service 198.18.0.3:3868 -s rr",
			"-a --sctp-service 198.18.0.3:3868 -r 198.18.1.5:3868 -m -w 1",
		},
	},
	{
		name: "mh with flags, tunnels (gue with port and checksums, gre, ipip)",
		svc:  Service{Protocol: TCP, Addr: mustAddr("198.18.0.4"), Port: 80, Scheduler: "mh", SchedFlags: MHFallback | MHPort},
		dests: []Destination{
			{Addr: mustAddr("198.18.1.6"), Port: 80, Forward: Tunnel, Weight: 1, TunnelType: GUE, TunnelPort: 6080, TunnelFlags: TunnelCsum},
			{Addr: mustAddr("198.18.1.7"), Port: 80, Forward: Tunnel, Weight: 1, TunnelType: GRE, TunnelFlags: TunnelCsum},
			{Addr: mustAddr("198.18.1.8"), Port: 80, Forward: Tunnel, Weight: 1},
			{Addr: mustAddr("198.18.1.9"), Port: 80, Forward: Tunnel, Weight: 2, TunnelType: GUE, TunnelPort: 6081, TunnelFlags: TunnelRemCsum},
		},
		lines: []string{
			"-A -t 198.18.0.4:80 -s mh -b mh-fallback,mh-port",
			"-a -t 198.18.0.4:80 -r 198.18.1.6:80 -i -w 1 --tun-type gue --tun-port 6080 --tun-csum",
			"-a -t 198.18.0.4:80 -r 198.18.1.7:80 -i -w 1 --tun-type gre --tun-csum",
			"-a -t 198.18.0.4:80 -r 198.18.1.8:80 -i -w 1 --tun-type ipip",
			"-a -t 198.18.0.4:80 -r 198.18.1.9:80 -i -w 2 --tun-type gue --tun-port 6081 --tun-remcsum",
		},
	},
}

func destsWithFamily(ds []Destination) []Destination {
	out := slices.Clone(ds)
	for i := range out {
		out[i].Family = out[i].family()
	}
	return out
}

func checkReadBack(t *testing.T, c *Client, tc crossCase) {
	t.Helper()
	ctx := t.Context()
	si, err := c.GetService(ctx, tc.svc.Key())
	if err != nil {
		t.Fatal(err)
	}
	if want := withFamily(tc.svc); si.Service != want {
		t.Fatalf("service read back:\n got %+v\nwant %+v", si.Service, want)
	}
	dis, err := c.Destinations(ctx, tc.svc.Key())
	if err != nil {
		t.Fatal(err)
	}
	var got []Destination
	for _, di := range dis {
		got = append(got, di.Destination)
	}
	want := destsWithFamily(tc.dests)
	sortDests(got)
	sortDests(want)
	if !slices.Equal(got, want) {
		t.Fatalf("destinations read back:\n got %+v\nwant %+v", got, want)
	}
}

func sortDests(ds []Destination) {
	slices.SortFunc(ds, func(a, b Destination) int { return a.Addr.Compare(b.Addr) })
}

// TestIntegrationClientWritesIpvsadmReads: what the client writes, ipvsadm
// -Sn shows, and the client reads back the same values.
func TestIntegrationClientWritesIpvsadmReads(t *testing.T) {
	for _, tc := range crossCases {
		t.Run(tc.name, func(t *testing.T) {
			c, ns := newTestClient(t)
			ctx := t.Context()
			if err := c.AddService(ctx, tc.svc); err != nil {
				t.Fatal(err)
			}
			for _, d := range tc.dests {
				if err := c.AddDestination(ctx, tc.svc.Key(), d); err != nil {
					t.Fatal(err)
				}
			}
			diffLines(t, "ipvsadm -Sn", tc.lines, saved(t, ns))
			checkReadBack(t, c, tc)
		})
	}
}

// TestIntegrationIpvsadmWritesClientReads: what ipvsadm writes, the client
// reads as the same values.
func TestIntegrationIpvsadmWritesClientReads(t *testing.T) {
	for _, tc := range crossCases {
		t.Run(tc.name, func(t *testing.T) {
			c, ns := newTestClient(t)
			ipvsadmRestore(t, ns, tc.lines...)
			checkReadBack(t, c, tc)
		})
	}
}

// TestIntegrationBatchWritesIpvsadmReads: the same tables, all in one batch.
func TestIntegrationBatchWritesIpvsadmReads(t *testing.T) {
	c, ns := newTestClient(t)
	var b Batch
	var want []string
	for _, tc := range crossCases {
		b.AddService(tc.svc)
		for _, d := range tc.dests {
			b.AddDestination(tc.svc.Key(), d)
		}
		want = append(want, tc.lines...)
	}
	if err := c.Apply(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "ipvsadm -Sn", want, saved(t, ns))
	snap, err := c.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Services) != len(crossCases) {
		t.Fatalf("snapshot has %d services, want %d", len(snap.Services), len(crossCases))
	}
	for _, tc := range crossCases {
		checkReadBack(t, c, tc)
	}
}
