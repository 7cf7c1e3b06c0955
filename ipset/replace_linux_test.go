package ipset

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

func TestIntegrationReplace(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := ctxT(t)
	s := Set{Name: "live", Type: HashIPPort, MaxElem: 3, Comment: true}
	e := func(i int) Entry {
		return Entry{IP: netip.AddrFrom4([4]byte{198, 18, 0, byte(i)}), Proto: TCP, Port: uint16(i)}
	}

	// A set that does not exist yet is created filled.
	if err := c.Replace(ctx, s, []Entry{e(1), e(2), e(1)}); err != nil {
		t.Fatal(err)
	}
	sameSet(t, "after the first Replace", SetInfo{Set: s, Entries: []Entry{e(1), e(2)}}, ipsetSave(t, ns)[0])

	// An existing one gets exactly the new entries, with the new options.
	s2 := s
	s2.MaxElem = 4
	withComment := e(4)
	withComment.Comment = "new"
	if err := c.Replace(ctx, s2, []Entry{e(2), e(3), withComment}); err != nil {
		t.Fatal(err)
	}
	sets := ipsetSave(t, ns)
	if len(sets) != 1 {
		t.Fatalf("after Replace, ipset save shows %d sets (temporary left behind?): %+v", len(sets), sets)
	}
	sameSet(t, "after the second Replace", SetInfo{Set: s2, Entries: []Entry{e(2), e(3), withComment}}, sets[0])

	// More entries than maxelem: refused before anything is touched.
	before := ns.Exec(t, "ipset", "save")
	var ve *ValidationError
	err := c.Replace(ctx, s2, []Entry{e(1), e(2), e(3), e(4), e(5)})
	if !errors.As(err, &ve) || ve.Field != "entries" {
		t.Errorf("Replace beyond maxelem: %v, want a ValidationError for entries", err)
	}
	// An invalid entry: same.
	if err := c.Replace(ctx, s2, []Entry{e(1), {IP: mustAddr("2001:db8::1"), Proto: TCP}}); !errors.As(err, &ve) || ve.Field != "entries[1].IP" {
		t.Errorf("Replace with an IPv6 entry in an IPv4 set: %v", err)
	}
	// Another type or family than the live set: refused, live set untouched.
	if err := c.Replace(ctx, Set{Name: "live", Type: HashIP}, []Entry{{IP: mustAddr("198.18.0.1")}}); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("Replace with another type: %v, want ErrTypeMismatch", err)
	}
	if after := ns.Exec(t, "ipset", "save"); after != before {
		t.Errorf("a refused Replace changed the kernel:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// A temporary set left behind by a crashed Replace is cleaned up.
	stale := s2
	stale.Name = tempName("live")
	if err := c.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(ctx, stale.Name, e(9)); err != nil {
		t.Fatal(err)
	}
	if err := c.Replace(ctx, s2, []Entry{e(1)}); err != nil {
		t.Fatalf("Replace with a stale temporary set: %v", err)
	}
	sets = ipsetSave(t, ns)
	if len(sets) != 1 {
		t.Fatalf("stale temporary set not cleaned: %+v", sets)
	}
	sameSet(t, "after Replace over a stale temporary", SetInfo{Set: s2, Entries: []Entry{e(1)}}, sets[0])
}

// ruleCounter runs a packet counter on an iptables rule that matches the
// set live: it sends one UDP datagram from inside ns to dst and returns
// whether the rule counted it.
type ruleCounter struct {
	t    *testing.T
	ns   *testutil.NetNS
	last map[string]int
}

var countRE = regexp.MustCompile(`(?m)^\[(\d+):\d+\] -A (\S+) .*--match-set (\S+) dst,dst`)

// counts reads the packet counters of the rules, by chain name.
func (rc *ruleCounter) counts() map[string]int {
	out := rc.ns.Exec(rc.t, "iptables-save", "-c", "-t", "filter")
	m := map[string]int{}
	for _, sm := range countRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(sm[1])
		m[sm[2]] = n
	}
	return m
}

// send sends one datagram to dst and reports which chains' rules counted it.
func (rc *ruleCounter) send(dst netip.AddrPort) map[string]bool {
	rc.t.Helper()
	var err error
	rc.ns.Do(rc.t, func() {
		var conn *net.UDPConn
		conn, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
		if err != nil {
			return
		}
		defer conn.Close()
		// The OUTPUT hook runs inside this write: when it returns, the
		// rule has counted the datagram or not.
		_, err = conn.Write([]byte("x"))
	})
	if err != nil {
		rc.t.Fatalf("sending to %v: %v", dst, err)
	}
	now := rc.counts()
	hit := map[string]bool{}
	for ch, n := range now {
		hit[ch] = n > rc.last[ch]
	}
	rc.last = now
	return hit
}

// A set that an iptables rule references is replaced with no moment at which
// a packet to a member that stays would miss it: at every step of Replace
// (through the test-only step hook) a datagram to such a member is counted
// by the rule, a datagram to a member that leaves is counted until the swap
// and no longer after it, and one to a member that arrives only after it.
// A Replace that flushed and refilled the live set, or destroyed and
// recreated it, would fail this test.
func TestIntegrationReplaceUnderIPTablesRule(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := ctxT(t)
	testutil.RequireTool(t, "iptables")
	ns.Exec(t, "ip", "addr", "add", "198.18.0.1/32", "dev", "lo")
	ns.Exec(t, "ip", "addr", "add", "198.18.0.2/32", "dev", "lo")
	ns.Exec(t, "ip", "addr", "add", "198.18.0.3/32", "dev", "lo")

	stays := netip.MustParseAddrPort("198.18.0.1:9")
	leaves := netip.MustParseAddrPort("198.18.0.2:9")
	arrives := netip.MustParseAddrPort("198.18.0.3:9")
	entry := func(ap netip.AddrPort) Entry { return Entry{IP: ap.Addr(), Proto: UDP, Port: ap.Port()} }

	s := Set{Name: "KUBE-CLUSTER-IP", Type: HashIPPort, MaxElem: 200000}
	filler := func(n, base int) []Entry {
		out := make([]Entry, n)
		for i := range out {
			out[i] = Entry{IP: netip.AddrFrom4([4]byte{198, 19, byte((base + i) >> 8), byte(base + i)}), Proto: TCP, Port: 80}
		}
		return out
	}
	old := append(filler(5000, 0), entry(stays), entry(leaves))
	if err := c.Replace(ctx, s, old); err != nil {
		t.Fatal(err)
	}
	// One rule per probe, each in its own chain, so each counts its own.
	for _, ch := range []string{"STAYS", "LEAVES", "ARRIVES"} {
		ns.Exec(t, "iptables", "-w", "-N", ch)
		ns.Exec(t, "iptables", "-w", "-A", ch, "-m", "set", "--match-set", s.Name, "dst,dst", "-j", "RETURN")
	}
	ns.Exec(t, "iptables", "-w", "-A", "OUTPUT", "-d", "198.18.0.1", "-j", "STAYS")
	ns.Exec(t, "iptables", "-w", "-A", "OUTPUT", "-d", "198.18.0.2", "-j", "LEAVES")
	ns.Exec(t, "iptables", "-w", "-A", "OUTPUT", "-d", "198.18.0.3", "-j", "ARRIVES")

	rc := &ruleCounter{t: t, ns: ns}
	rc.last = rc.counts()
	if len(rc.last) != 3 {
		t.Fatalf("found %d set rules in iptables-save, want 3", len(rc.last))
	}
	probe := func(when string, wantLeaves, wantArrives bool) {
		t.Helper()
		if !rc.send(stays)["STAYS"] {
			t.Errorf("%s: a packet to %v, in the set before and after, missed the set", when, stays)
		}
		if got := rc.send(leaves)["LEAVES"]; got != wantLeaves {
			t.Errorf("%s: packet to the leaving member %v matched=%v, want %v", when, leaves, got, wantLeaves)
		}
		if got := rc.send(arrives)["ARRIVES"]; got != wantArrives {
			t.Errorf("%s: packet to the arriving member %v matched=%v, want %v", when, arrives, got, wantArrives)
		}
	}
	probe("before Replace", true, false)

	if err := c.Destroy(ctx, s.Name); !errors.Is(err, ErrInUse) {
		t.Errorf("destroy of a set a rule references: %v, want ErrInUse", err)
	}
	if err := c.Rename(ctx, s.Name, "other"); !errors.Is(err, ErrInUse) {
		t.Errorf("rename of a set a rule references: %v, want ErrInUse", err)
	}

	var steps []string
	swapped := false
	c.c.step = func(step string) {
		steps = append(steps, step)
		if strings.HasPrefix(step, "swapped") {
			swapped = true
		}
		probe("after step "+fmt.Sprint(len(steps))+" ("+step+")", !swapped, swapped)
	}
	defer func() { c.c.step = nil }()
	if err := c.Replace(ctx, s, append(filler(6000, 10000), entry(stays), entry(arrives))); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 4 {
		t.Errorf("Replace went through steps %q, want create, fill, swap, destroy", steps)
	}
	c.c.step = nil
	probe("after Replace", false, true)

	h, err := c.Header(ctx, s.Name)
	if err != nil || h.References != 3 || h.Elements != 6002 {
		t.Errorf("after Replace the live set is %+v, %v; want 3 references and 6002 entries", h, err)
	}
	if out := ns.Exec(t, "ipset", "list", "-n"); out != s.Name+"\n" {
		t.Errorf("sets after Replace: %q", out)
	}
	if _, err := c.Header(ctx, tempName(s.Name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary set still there: %v", err)
	}
}
