package proxier

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// theirPersistentUDP is another program's persistent, one-packet virtual
// server with a netmask: the knobs the test sets on its own, which it must
// never touch.
const theirPersistentUDP = "-A -u 198.18.200.2:53 -s rr -p 30 -M 255.255.0.0 -o"

// TestIntegrationKnobs checks the persistence netmask and one-packet
// scheduling against ipvsadm -Sn in the VM: written on the first Sync (the
// IPv4 netmask as a mask, the IPv6 one as a length; -o on the UDP virtual
// servers only), changed by one update per virtual server, repaired by
// Reconcile after ipvsadm -E changed them, with another program's virtual
// servers (one with the same knobs) untouched throughout.
func TestIntegrationKnobs(t *testing.T) {
	ctx := context.Background()
	tp := newTopology(t, 0, 1)
	tp.addForeign(t)
	tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nipvsadm "+theirPersistentUDP)
	k := tp.newProxier(t, Config{Backend: NFTables, Families: []Family{IPv4, IPv6}})
	svc := Service{
		ClusterIPs:      []netip.Addr{a("198.18.100.1"), a("2001:db8:100::1")},
		Ports:           []Port{portDNS, portHTTP},
		SessionAffinity: &SessionAffinity{Timeout: time.Minute, IPv4PrefixLen: 24, IPv6PrefixLen: 64},
		OnePacket:       true,
		Endpoints:       tp.endpoints(true, true, []int{0}),
	}
	k.sync(t, State{Services: map[string]Service{"dns": svc}})
	want := map[string]string{
		"-A -u 198.18.100.1:53":      "-s rr -p 60 -M 255.255.255.0 -o",
		"-A -t 198.18.100.1:80":      "-s rr -p 60 -M 255.255.255.0",
		"-A -u [2001:db8:100::1]:53": "-s rr -p 60 -M 64 -o",
		"-A -t [2001:db8:100::1]:80": "-s rr -p 60 -M 64",
	}
	checkKnobs(t, tp, "after the first sync", want)

	svc.SessionAffinity.IPv4PrefixLen = 16
	res, err := k.p.Update(ctx, map[string]*Service{"dns": &svc})
	must(t, err)
	got := kinds(&res.Plan.IPVSAdd)
	slices.Sort(got)
	if !slices.Equal(got, []string{"update service tcp 198.18.100.1:80", "update service udp 198.18.100.1:53"}) ||
		res.Plan.IPVSDelete.Len() != 0 {
		t.Errorf("plan of an IPv4 netmask change: %q, deletes %d", got, res.Plan.IPVSDelete.Len())
	}
	want["-A -u 198.18.100.1:53"] = "-s rr -p 60 -M 255.255.0.0 -o"
	want["-A -t 198.18.100.1:80"] = "-s rr -p 60 -M 255.255.0.0"
	checkKnobs(t, tp, "after the update", want)

	tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nipvsadm -E -u [2001:db8:100::1]:53 -s rr -p 60 -M 48")
	rep, err := k.p.Reconcile(ctx)
	must(t, err)
	if len(rep.Drift) != 1 || rep.Drift[0].Problem != "one-packet false, want true; persistence prefix 48, want 64" {
		t.Errorf("drift after ipvsadm -E:\n%v", rep)
	}
	checkKnobs(t, tp, "after Reconcile", want)
	if rep, err := k.p.Reconcile(ctx); err != nil || len(rep.Drift) != 0 {
		t.Errorf("second Reconcile: %v\n%v", err, rep)
	}
	k.checkForeignServer(t)
	must(t, k.p.Cleanup(ctx))
	s := tp.snapshot(t)
	checkForeign(t, s)
	lines := s.ipvsLines()
	if !slices.Contains(lines, theirPersistentUDP) || slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "100::1") || strings.Contains(l, "198.18.100.") }) {
		t.Errorf("ipvsadm -Sn after Cleanup:\n%s", strings.Join(lines, "\n"))
	}
}

// checkKnobs fails t unless ipvsadm -Sn shows each virtual server (by the
// start of its line) with the rest of the line wanted, and another
// program's persistent one unchanged.
func checkKnobs(t *testing.T, tp *topology, when string, want map[string]string) {
	t.Helper()
	lines := tp.snapshot(t).ipvsLines()
	for head, rest := range want {
		if !slices.Contains(lines, head+" "+rest) {
			t.Errorf("%s: no line %q in ipvsadm -Sn:\n%s", when, head+" "+rest, strings.Join(lines, "\n"))
		}
	}
	if !slices.Contains(lines, theirPersistentUDP) {
		t.Errorf("%s: another program's %q changed:\n%s", when, theirPersistentUDP, strings.Join(lines, "\n"))
	}
}
