package ipset

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

// newTestClient returns a client in a fresh network namespace, where the
// kernel must have ipset (skip outside the VM rig, fail inside it).
func newTestClient(t *testing.T) (*Client, *testutil.NetNS) {
	t.Helper()
	ns := testutil.NewNetNS(t)
	c, err := New(&Config{NetNS: ns.Handle()})
	if errors.Is(err, ErrNotSupported) {
		testutil.Missing(t, "ipset (module ip_set)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ns
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// ipsetSave runs Debian's ipset inside ns and parses what it prints.
func ipsetSave(t *testing.T, ns *testutil.NetNS, args ...string) []SetInfo {
	t.Helper()
	out := ns.Exec(t, "ipset", append([]string{"save"}, args...)...)
	sets, err := ParseText(strings.NewReader(out))
	if err != nil {
		t.Fatalf("parsing ipset save: %v\n%s", err, out)
	}
	return sets
}

func mustAddr(s string) netip.Addr  { return netip.MustParseAddr(s) }
func mustNet(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func keys(es []Entry) map[Entry]Entry {
	m := make(map[Entry]Entry, len(es))
	for _, e := range es {
		m[e.Key()] = e
	}
	return m
}

func TestIntegrationProtocolNegotiation(t *testing.T) {
	c, ns := newTestClient(t)
	// The kernel speaks protocol 7 since Linux 5.3 (IPSET_ATTR_INDEX); ipset
	// v7 talks 7 to it too.
	out := ns.Exec(t, "ipset", "version")
	if c.Protocol() != protocolMax || !strings.Contains(out, fmt.Sprintf("protocol version: %d", c.Protocol())) {
		t.Errorf("negotiated protocol %d; ipset version says %q", c.Protocol(), out)
	}
	// The revision the kernel reports for a set created by the client is
	// the newest one the TYPE command offered, and one that has comments.
	ctx := ctxT(t)
	for _, ty := range []Type{HashIP, HashIPPort, HashIPPortIP, HashIPPortNet, HashNet, HashNetPort, BitmapPort} {
		s := Set{Name: "r", Type: ty, Comment: true}
		if err := c.Create(ctx, s); err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
		h, err := c.Header(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := c.c.revision(ctx, ty, s.family())
		if h.Revision != want || !h.Comment || want == 0 {
			t.Errorf("%s: created with revision %d (comment %v), TYPE said newest is %d", ty, h.Revision, h.Comment, want)
		}
		if err := c.Destroy(ctx, "r"); err != nil {
			t.Fatal(err)
		}
	}
}

// typeCases holds, for every supported type and family, a set and entries
// that use all of its dimensions.
func typeCases() []SetInfo {
	ext := func(s Set) Set { s.Timeouts, s.Counters, s.Comment = true, true, true; return s }
	const ttl = 1000 * time.Second
	return []SetInfo{
		{Set: ext(Set{Name: "ip4", Type: HashIP, HashSize: 64, MaxElem: 100}), Entries: []Entry{
			{IP: mustAddr("198.18.0.1")}, {IP: mustAddr("198.19.255.254"), Timeout: ttl, Comment: "two words"}}},
		{Set: ext(Set{Name: "ip6", Type: HashIP, Family: inet.IPv6}), Entries: []Entry{
			{IP: mustAddr("2001:db8::1"), Packets: 7, Bytes: 700}}},
		{Set: ext(Set{Name: "ipport4", Type: HashIPPort}), Entries: []Entry{
			{IP: mustAddr("198.18.0.10"), Proto: TCP, Port: 80}, {IP: mustAddr("198.18.0.10"), Proto: UDP, Port: 53, Comment: "dns"},
			{IP: mustAddr("198.18.0.11"), Proto: SCTP, Port: 9}}},
		{Set: Set{Name: "ipport6", Type: HashIPPort, Family: inet.IPv6}, Entries: []Entry{
			{IP: mustAddr("2001:db8::10"), Proto: TCP, Port: 443}}},
		{Set: ext(Set{Name: "ipportip4", Type: HashIPPortIP}), Entries: []Entry{
			{IP: mustAddr("198.18.1.5"), Proto: TCP, Port: 8080, IP2: mustAddr("198.18.1.5"), Timeout: ttl}}},
		{Set: Set{Name: "ipportip6", Type: HashIPPortIP, Family: inet.IPv6}, Entries: []Entry{
			{IP: mustAddr("2001:db8::5"), Proto: UDP, Port: 1, IP2: mustAddr("2001:db8::6")}}},
		{Set: ext(Set{Name: "ipportnet4", Type: HashIPPortNet}), Entries: []Entry{
			{IP: mustAddr("198.18.0.7"), Proto: TCP, Port: 443, Net2: mustNet("198.18.128.0/17")}}},
		{Set: Set{Name: "ipportnet6", Type: HashIPPortNet, Family: inet.IPv6}, Entries: []Entry{
			{IP: mustAddr("2001:db8::7"), Proto: TCP, Port: 443, Net2: mustNet("2001:db8:1::/48")}}},
		{Set: ext(Set{Name: "net4", Type: HashNet}), Entries: []Entry{
			{Net: mustNet("198.18.4.0/24")}, {Net: mustNet("198.18.5.5/32"), Comment: "host"}}},
		{Set: Set{Name: "net6", Type: HashNet, Family: inet.IPv6}, Entries: []Entry{{Net: mustNet("2001:db8:2::/64")}}},
		{Set: ext(Set{Name: "netport4", Type: HashNetPort}), Entries: []Entry{
			{Net: mustNet("198.18.8.0/22"), Proto: UDP, Port: 4789}}},
		{Set: Set{Name: "netport6", Type: HashNetPort, Family: inet.IPv6}, Entries: []Entry{
			{Net: mustNet("2001:db8:3::/56"), Proto: SCTP, Port: 38412}}},
		{Set: ext(Set{Name: "bmport", Type: BitmapPort, PortFrom: 30000, PortTo: 32767}), Entries: []Entry{
			{Port: 30000}, {Port: 32767, Comment: "last"}}},
		{Set: Set{Name: "bmall", Type: BitmapPort}, Entries: []Entry{{Port: 0}, {Port: 65535}}},
	}
}

// sameSet checks that got (read back from the kernel by either side) is
// want: same options (with the kernel's defaults), same elements and
// comments, timeouts counting down from what was set, counters as added.
func sameSet(t *testing.T, who string, want, got SetInfo) {
	t.Helper()
	ws := want.Set
	ws.Family = ws.family()
	if ws.Type == BitmapPort {
		ws.PortFrom, ws.PortTo = ws.portRange()
	} else {
		ws.HashSize = max(ws.HashSize, 64)
		if ws.HashSize == 0 || want.HashSize == 0 {
			ws.HashSize = DefaultHashSize
		}
		ws.MaxElem = max(ws.MaxElem, 0)
		if ws.MaxElem == 0 {
			ws.MaxElem = DefaultMaxElem
		}
	}
	if got.Set != ws {
		t.Errorf("%s: set %s:\n got %+v\nwant %+v", who, want.Name, got.Set, ws)
	}
	gk, wk := keys(got.Entries), keys(want.Entries)
	if len(gk) != len(wk) || len(got.Entries) != len(want.Entries) {
		t.Errorf("%s: set %s has %d entries %v, want %d %v", who, want.Name, len(got.Entries), got.Entries, len(want.Entries), want.Entries)
	}
	for k, w := range wk {
		g, ok := gk[k]
		if !ok {
			t.Errorf("%s: set %s lacks %v", who, want.Name, k)
			continue
		}
		if g.Comment != w.Comment || g.Packets != w.Packets || g.Bytes != w.Bytes {
			t.Errorf("%s: set %s entry %v: comment/packets/bytes %q/%d/%d, want %q/%d/%d",
				who, want.Name, k, g.Comment, g.Packets, g.Bytes, w.Comment, w.Packets, w.Bytes)
		}
		wt := w.Timeout
		if wt == 0 {
			wt = want.Timeout
		}
		if g.Timeout > wt || (wt > 0 && g.Timeout < wt-time.Minute) {
			t.Errorf("%s: set %s entry %v: timeout %v, want at most %v and not much less", who, want.Name, k, g.Timeout, wt)
		}
	}
}

// Every type and family, written by the client and read by `ipset save`,
// and written by `ipset restore` and read by the client.
func TestIntegrationEveryTypeBothWays(t *testing.T) {
	cases := typeCases()
	t.Run("client writes, ipset save reads", func(t *testing.T) {
		c, ns := newTestClient(t)
		ctx := ctxT(t)
		for _, tc := range cases {
			if err := c.Create(ctx, tc.Set); err != nil {
				t.Fatalf("create %s: %v", tc.Name, err)
			}
			if err := c.Add(ctx, tc.Name, tc.Entries...); err != nil {
				t.Fatalf("add to %s: %v", tc.Name, err)
			}
		}
		saved := ipsetSave(t, ns)
		if len(saved) != len(cases) {
			t.Fatalf("ipset save shows %d sets, want %d", len(saved), len(cases))
		}
		for i, tc := range cases {
			sameSet(t, "ipset save", tc, saved[i])
		}
	})
	t.Run("ipset restore writes, client reads", func(t *testing.T) {
		c, ns := newTestClient(t)
		ctx := ctxT(t)
		var text strings.Builder
		if err := WriteText(&text, cases); err != nil {
			t.Fatal(err)
		}
		if out, err := ns.TryExec(t, []byte(text.String()), "ipset", "restore"); err != nil {
			t.Fatalf("ipset restore: %v %s\n%s", err, out, text.String())
		}
		all, err := c.ListAll(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(cases) {
			t.Fatalf("client lists %d sets, want %d", len(all), len(cases))
		}
		for i, tc := range cases {
			sameSet(t, "client ListAll", tc, all[i])
			one, err := c.List(ctx, tc.Name)
			if err != nil {
				t.Fatal(err)
			}
			sameSet(t, "client List", tc, one)
			for _, e := range tc.Entries {
				if ok, err := c.Test(ctx, tc.Name, e); !ok || err != nil {
					t.Errorf("Test(%s, %v) = %v, %v; want true", tc.Name, e, ok, err)
				}
			}
		}
		heads, err := c.ListAll(ctx, true)
		if err != nil || len(heads) != len(cases) || heads[0].Entries != nil || heads[0].Elements != uint32(len(cases[0].Entries)) {
			t.Errorf("headers only: %+v, %v", heads, err)
		}
	})
}
