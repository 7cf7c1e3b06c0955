package ipvs

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// TestIntegrationStatsAfterTraffic sends real TCP connections through a
// service inside the namespace (VIP and backend both on lo, masquerading),
// then checks the counters against ipvsadm --stats, and ZeroService.
func TestIntegrationStatsAfterTraffic(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := t.Context()
	ns.Exec(t, "ip", "addr", "add", "198.18.0.10/32", "dev", "lo")
	ns.Exec(t, "ip", "addr", "add", "198.18.0.20/32", "dev", "lo")

	ns.Serve(t, "tcp4", "198.18.0.20:8080", func(conn net.Conn) {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		io.WriteString(conn, strings.ToUpper(line))
	})

	svc := Service{Protocol: TCP, Addr: mustAddr("198.18.0.10"), Port: 80, Scheduler: "rr"}
	if err := c.AddService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if err := c.AddDestination(ctx, svc.Key(), Destination{Addr: mustAddr("198.18.0.20"), Port: 8080, Weight: 1}); err != nil {
		t.Fatal(err)
	}
	const conns = 5
	for i := range conns {
		var reply string
		ns.Do(t, func() {
			conn, err := net.Dial("tcp4", "198.18.0.10:80")
			if err != nil {
				t.Fatalf("connection %d through the VIP: %v", i, err)
			}
			defer conn.Close()
			io.WriteString(conn, "hello ipvs\n")
			reply, _ = bufio.NewReader(conn).ReadString('\n')
		})
		if reply != "HELLO IPVS\n" {
			t.Fatalf("connection %d: reply %q", i, reply)
		}
	}

	si := waitForStats(t, c, svc.Key(), func(s Stats) bool { return s.Connections >= conns })
	ds, err := c.Destinations(ctx, svc.Key())
	if err != nil {
		t.Fatal(err)
	}
	if si.Stats.Connections != conns || si.Stats.PacketsIn == 0 || si.Stats.BytesIn == 0 || si.Stats.PacketsOut == 0 || si.Stats.BytesOut == 0 {
		t.Fatalf("service stats after %d connections: %+v", conns, si.Stats)
	}
	if len(ds) != 1 || ds[0].Stats.Connections != conns || ds[0].Stats.BytesIn != si.Stats.BytesIn {
		t.Fatalf("destination stats: %+v", ds)
	}
	// ipvsadm --stats --exact prints Conns InPkts OutPkts InBytes OutBytes.
	want := []string{itoa64(si.Stats.Connections), itoa64(si.Stats.PacketsIn), itoa64(si.Stats.PacketsOut), itoa64(si.Stats.BytesIn), itoa64(si.Stats.BytesOut)}
	if got := statsColumns(t, ns, "198.18.0.10:80"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("ipvsadm --stats shows %v, the client %v", got, want)
	}

	if err := c.ZeroService(ctx, svc.Key()); err != nil {
		t.Fatal(err)
	}
	si, err = c.GetService(ctx, svc.Key())
	if err != nil {
		t.Fatal(err)
	}
	if si.Stats.Connections != 0 || si.Stats.BytesIn != 0 {
		t.Fatalf("after ZeroService: %+v", si.Stats)
	}
	if got := statsColumns(t, ns, "198.18.0.10:80"); strings.Join(got, " ") != "0 0 0 0 0" {
		t.Fatalf("after ZeroService, ipvsadm --stats shows %v", got)
	}
	// ZeroAll, cross-checked the other way: ipvsadm zeroes, then traffic,
	// then ZeroAll.
	ns.Do(t, func() {
		conn, err := net.Dial("tcp4", "198.18.0.10:80")
		if err == nil {
			io.WriteString(conn, "x\n")
			bufio.NewReader(conn).ReadString('\n')
			conn.Close()
		}
	})
	si = waitForStats(t, c, svc.Key(), func(s Stats) bool { return s.Connections == 1 })
	if got := statsColumns(t, ns, "198.18.0.10:80"); got[0] != "1" || got[3] != itoa64(si.Stats.BytesIn) {
		t.Fatalf("one more connection: ipvsadm shows %v, the client %+v", got, si.Stats)
	}
	if err := c.ZeroAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := statsColumns(t, ns, "198.18.0.10:80"); strings.Join(got, " ") != "0 0 0 0 0" {
		t.Fatalf("after ZeroAll, ipvsadm --stats shows %v", got)
	}
}

// waitForStats polls the service until cond holds. The kernel (before 6.2)
// folds its per-CPU counters into what it reports only in its rate
// estimator, every 2 seconds, so fresh traffic shows up within a few
// seconds, never at once: there is no event to wait on but the counters.
func waitForStats(t *testing.T, c *Client, k ServiceKey, cond func(Stats) bool) ServiceInfo {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		si, err := c.GetService(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		if cond(si.Stats) {
			return si
		}
		if time.Now().After(deadline) {
			t.Fatalf("counters never reached the expected values in 30s: %+v", si.Stats)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func itoa64(v uint64) string { return strconv.FormatUint(v, 10) }

// statsColumns returns the Conns, InPkts, OutPkts, InBytes, OutBytes of the
// service line for vip in ipvsadm -Ln --stats --exact.
func statsColumns(t *testing.T, ns *testutil.NetNS, vip string) []string {
	t.Helper()
	out := ns.Exec(t, "ipvsadm", "-Ln", "--stats", "--exact")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 7 && f[1] == vip {
			return f[2:]
		}
	}
	t.Fatalf("no service %s in:\n%s", vip, out)
	return nil
}
