package ipvsadm

import (
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// TestIntegrationTableMatchesIpvsadm: in a namespace holding a neighbour's
// service (made by ipvsadm) and ours of every kind, WriteTable of a
// Snapshot, with the kernel's Info, prints what ipvsadm -Ln prints, in
// each listing format (counters and rates scaled or --exact). No traffic is sent, so every counter and rate is 0
// and both reads see the same table.
func TestIntegrationTableMatchesIpvsadm(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireIPVS(t, ns)
	ipvsadmRestore(t, ns,
		"-A -t 198.18.0.50:80 -s wlc",
		"-a -t 198.18.0.50:80 -r 198.18.1.50:80 -m -w 3",
		"-a -t 198.18.0.50:80 -r 198.18.1.51:80 -g -w 0",
	)
	c, err := ipvs.New(&ipvs.Config{NetNS: ns.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	var b ipvs.Batch
	tunnels, _ := tunnelTable()
	tunnels.Services[0].Addr = mustAddr("198.18.0.60") // listedTable has 198.18.0.4:80
	for _, s := range append(listedTable().Services, tunnels.Services...) {
		b.AddService(s.Service)
		for _, d := range s.Destinations {
			b.AddDestination(s.Key(), d.Destination)
		}
	}
	if err := c.Apply(ctx, &b); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(listedTable().Services) + 2; len(snap.Services) != want {
		t.Fatalf("snapshot has %d services, want %d", len(snap.Services), want)
	}
	for _, tc := range []struct {
		args []string
		opts TableOptions
	}{
		{[]string{"-Ln"}, TableOptions{Info: &info}},
		{[]string{"-Ln", "--exact"}, TableOptions{Info: &info, Exact: true}},
		{[]string{"-Ln", "--stats"}, TableOptions{Info: &info, Format: TableStats}},
		{[]string{"-Ln", "--stats", "--exact"}, TableOptions{Info: &info, Format: TableStats, Exact: true}},
		{[]string{"-Ln", "--rate"}, TableOptions{Info: &info, Format: TableRate}},
		{[]string{"-Ln", "--rate", "--exact"}, TableOptions{Info: &info, Format: TableRate, Exact: true}},
		{[]string{"-Ln", "--thresholds"}, TableOptions{Info: &info, Format: TableThresholds}},
		{[]string{"-Ln", "--persistent-conn"}, TableOptions{Info: &info, Format: TablePersistentConn}},
		{[]string{"-Ln", "--tun-info"}, TableOptions{Info: &info, Format: TableTunnelInfo}},
	} {
		theirs := ns.Exec(t, "ipvsadm", tc.args...)
		ours := string(AppendTable(nil, snap, tc.opts))
		if ours != theirs {
			t.Errorf("WriteTable(%v, exact %v) vs ipvsadm %v (-ipvsadm +ours):\n%s",
				tc.opts.Format, tc.opts.Exact, tc.args, lineDiff(theirs, ours))
		}
	}
	// The neighbour's service is listed like ours.
	want := "TCP  198.18.0.50:80 wlc\n" +
		"  -> 198.18.1.50:80               Masq    3      0          0         \n" +
		"  -> 198.18.1.51:80               Route   0      0          0         \n"
	if got := string(AppendTable(nil, snap, TableOptions{})); !strings.Contains(got, want) {
		t.Errorf("the neighbour's service is not listed as\n%s\nin\n%s", want, got)
	}
}
