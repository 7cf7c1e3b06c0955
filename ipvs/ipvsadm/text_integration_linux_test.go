package ipvsadm

import (
	"context"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// textTableBatch is textTable as a batch of add requests.
func textTableBatch() *ipvs.Batch {
	var b ipvs.Batch
	for _, s := range textTable().Services {
		b.AddService(s.Service)
		for _, d := range s.Destinations {
			b.AddDestination(s.Key(), d.Destination)
		}
	}
	return &b
}

// What the client writes, ipvsadm -Sn shows, and Save of what the client
// reads back is the same text.
func TestIntegrationTextClientToIpvsadm(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireIPVS(t, ns)
	c, err := ipvs.New(&ipvs.Config{NetNS: ns.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Apply(ctx, textTableBatch()); err != nil {
		t.Fatal(err)
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := Save(snap)
	if err != nil {
		t.Fatal(err)
	}
	theirs := ns.Exec(t, "ipvsadm", "-Sn")
	if string(ours) != theirs {
		t.Fatalf("SaveText of the client's snapshot vs ipvsadm -Sn (-ipvsadm +ours):\n%s", lineDiff(theirs, string(ours)))
	}
	if theirs != textTableSave {
		t.Fatalf("ipvsadm -Sn vs the expected text (-want +ipvsadm):\n%s", lineDiff(textTableSave, theirs))
	}
	// The client reads the thresholds ipvsadm does not show.
	full, err := MarshalSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := MarshalSnapshot(textTable())
	if string(full) != string(want) {
		t.Fatalf("MarshalText of the client's snapshot (-want +got):\n%s", lineDiff(string(want), string(full)))
	}
}

// What ipvsadm -R writes from our text, the client reads back as the same
// text, and ipvsadm -Sn prints Save's.
func TestIntegrationTextIpvsadmToClient(t *testing.T) {
	ns := testutil.NewNetNS(t)
	testutil.RequireIPVS(t, ns)
	in, err := MarshalSnapshot(textTable()) // with -x/-y, which ipvsadm -R takes
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ns.TryExec(t, in, "ipvsadm", "-R"); err != nil {
		t.Fatalf("ipvsadm -R: %v\n%s", err, out)
	}
	c, err := ipvs.New(&ipvs.Config{NetNS: ns.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	snap, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err := MarshalSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(in) {
		t.Fatalf("client's reading of ipvsadm -R (-want +got):\n%s", lineDiff(string(in), string(got)))
	}
	if theirs := ns.Exec(t, "ipvsadm", "-Sn"); theirs != textTableSave {
		t.Fatalf("ipvsadm -Sn after ipvsadm -R (-want +ipvsadm):\n%s", lineDiff(textTableSave, theirs))
	}
	// And a batch rendered as ipvsadm -R input makes the same requests:
	// edit, then delete, through ipvsadm.
	var b ipvs.Batch
	web := textTable().Services[2]
	d := web.Destinations[1].Destination
	d.Weight = 42
	b.UpdateDestination(web.Key(), d)
	b.DeleteService(textTable().Services[3].Key())
	text, err := MarshalBatch(&b)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ns.TryExec(t, text, "ipvsadm", "-R"); err != nil {
		t.Fatalf("ipvsadm -R of %q: %v\n%s", text, err, out)
	}
	after, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gotAfter, _ := Save(after)
	wantAfter := textTableSave
	wantAfter = replaceLine(wantAfter, "-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1", "-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 42")
	wantAfter = replaceLine(wantAfter, "-A -u 198.18.0.1:53 -s wlc -o", "")
	if string(gotAfter) != wantAfter {
		t.Fatalf("after ipvsadm -R of a batch (-want +got):\n%s", lineDiff(wantAfter, string(gotAfter)))
	}
}

func replaceLine(text, old, new string) string {
	var out []byte
	for _, l := range splitLines(text) {
		if l == old {
			if new == "" {
				continue
			}
			l = new
		}
		out = append(append(out, l...), '\n')
	}
	return string(out)
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}
