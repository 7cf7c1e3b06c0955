package ipset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/inet"
)

func TestIntegrationCommandsAndErrors(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := ctxT(t)
	a := Set{Name: "a", Type: HashIPPort, MaxElem: 2}
	if err := c.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, a); !errors.Is(err, fs.ErrExist) {
		t.Errorf("create of an existing set: %v, want fs.ErrExist", err)
	}
	if err := c.Ensure(ctx, a); err != nil {
		t.Errorf("ensure of the same set: %v", err)
	}
	if err := c.Ensure(ctx, Set{Name: "a", Type: HashIP}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("ensure with another type: %v, want fs.ErrExist", err)
	}
	if _, err := c.Header(ctx, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("header of a missing set: %v, want fs.ErrNotExist", err)
	}
	if err := c.Add(ctx, "nope", Entry{IP: mustAddr("198.18.0.1")}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("add to a missing set: %v, want fs.ErrNotExist", err)
	}

	e1 := Entry{IP: mustAddr("198.18.0.1"), Proto: TCP, Port: 1}
	e2 := Entry{IP: mustAddr("198.18.0.2"), Proto: TCP, Port: 2}
	e3 := Entry{IP: mustAddr("198.18.0.3"), Proto: TCP, Port: 3}
	if err := c.Add(ctx, "a", e1, e1); err != nil {
		t.Fatalf("idempotent add: %v", err)
	}
	err := c.AddStrict(ctx, "a", e1, e2)
	var ie *Error
	if !errors.Is(err, ErrElementExists) || !errors.Is(err, fs.ErrExist) || !errors.As(err, &ie) || ie.Entry != "198.18.0.1,tcp:1" || ie.Code != codeExist {
		t.Errorf("strict add of a present entry: %v, want ErrElementExists naming 198.18.0.1,tcp:1", err)
	}
	// e2 went in despite e1's failure; the set (maxelem 2) is now full.
	err = c.Add(ctx, "a", e3)
	if !errors.Is(err, ErrSetFull) || !errors.As(err, &ie) || ie.Entry != "198.18.0.3,tcp:3" {
		t.Errorf("add to a full set: %v, want ErrSetFull naming the entry", err)
	}
	if out := ns.Exec(t, "ipset", "list", "a"); !strings.Contains(out, "Number of entries: 2") {
		t.Errorf("ipset list after the full add:\n%s", out)
	}
	// Bad input is refused before anything is sent, naming the field.
	var ve *ValidationError
	if err := c.Add(ctx, "a", e3, Entry{IP: mustAddr("198.18.0.9"), Port: 9}); !errors.As(err, &ve) || ve.Field != "entries[1].Proto" {
		t.Errorf("add without protocol: %v, want a ValidationError for entries[1].Proto", err)
	}

	if ok, err := c.Test(ctx, "a", e2); !ok || err != nil {
		t.Errorf("test of a member: %v %v", ok, err)
	}
	if ok, err := c.Test(ctx, "a", e3); ok || err != nil {
		t.Errorf("test of a non-member: %v %v", ok, err)
	}
	if err := c.Del(ctx, "a", e3, e2); err != nil {
		t.Errorf("idempotent del: %v", err)
	}
	if err := c.DelStrict(ctx, "a", e2); !errors.Is(err, ErrElementMissing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("strict del of an absent entry: %v, want ErrElementMissing", err)
	}
	if got := ns.Exec(t, "ipset", "save", "a"); !strings.Contains(got, "add a 198.18.0.1,tcp:1\n") || strings.Contains(got, "198.18.0.2") {
		t.Errorf("after del, ipset save shows:\n%s", got)
	}

	// Rename, swap, flush, destroy.
	if err := c.Create(ctx, Set{Name: "b", Type: HashIPPort}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(ctx, "b", e3); err != nil {
		t.Fatal(err)
	}
	if err := c.Rename(ctx, "b", "a"); !errors.Is(err, ErrSetExists) || !errors.Is(err, fs.ErrExist) {
		t.Errorf("rename onto a taken name: %v, want ErrSetExists", err)
	}
	if err := c.Rename(ctx, "b", "c"); err != nil {
		t.Fatal(err)
	}
	if err := c.Swap(ctx, "a", "c"); err != nil {
		t.Fatal(err)
	}
	sets := ipsetSave(t, ns)
	if len(sets) != 2 || sets[0].Name != "a" || len(sets[0].Entries) != 1 || sets[0].Entries[0] != e3 ||
		sets[1].Name != "c" || sets[1].MaxElem != 2 || sets[1].Entries[0] != e1 {
		t.Errorf("after rename b->c and swap a<->c, ipset save shows %+v", sets)
	}
	if err := c.Create(ctx, Set{Name: "d", Type: HashIP}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, Set{Name: "d6", Type: HashIPPort, Family: inet.IPv6}); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{"d", "d6"} {
		if err := c.Swap(ctx, "a", other); !errors.Is(err, ErrTypeMismatch) {
			t.Errorf("swap with %s: %v, want ErrTypeMismatch", other, err)
		}
	}
	if err := c.Flush(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if h, err := c.Header(ctx, "a"); err != nil || h.Elements != 0 {
		t.Errorf("after flush: %+v, %v", h, err)
	}
	for _, n := range []string{"a", "c", "d", "d6"} {
		if err := c.Destroy(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Destroy(ctx, "a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("destroy of a missing set: %v", err)
	}
	if err := c.Swap(ctx, "x", "y"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("swap of missing sets: %v", err)
	}
	if out := ns.Exec(t, "ipset", "list", "-n"); out != "" {
		t.Errorf("sets left: %q", out)
	}
}

func TestIntegrationHashNetTest(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := ctxT(t)
	if err := c.Create(ctx, Set{Name: "n", Type: HashNet}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(ctx, "n", Entry{Net: mustNet("198.18.4.0/24")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		net string
		in  bool
	}{{"198.18.4.7/32", true}, {"198.18.4.0/24", true}, {"198.18.4.0/25", false}, {"198.18.5.1/32", false}} {
		if ok, err := c.Test(ctx, "n", Entry{Net: mustNet(tc.net)}); ok != tc.in || err != nil {
			t.Errorf("Test %s = %v, %v; want %v", tc.net, ok, err, tc.in)
		}
	}
}

func TestIntegrationBitmapPortRange(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := ctxT(t)
	if err := c.Create(ctx, Set{Name: "p", Type: BitmapPort, PortFrom: 100, PortTo: 200}); err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	if err := c.Add(ctx, "p", Entry{Port: 201}); !errors.As(err, &ve) || ve.Field != "entries[0].Port" {
		t.Errorf("port outside the range: %v", err)
	}
	// bitmap:port refuses a protocol attribute: the kernel says so too.
	e := Entry{Port: 150, Proto: TCP}
	_, err := c.c.t.Execute(ctx, elemRequest(c.c.proto, cmdAdd, "p", &e, false))
	if err == nil {
		t.Error("the kernel accepted a protocol on a bitmap:port element; the validation would be needless")
	}
}

func TestIntegrationLargeListSpansMessages(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := ctxT(t)
	const n = 8000
	s := Set{Name: "big", Type: HashIPPort, Comment: true}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	want := make([]Entry, n)
	for i := range want {
		want[i] = Entry{IP: netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), Proto: UDP, Port: uint16(i), Comment: "c"}
	}
	if err := c.Add(ctx, "big", want...); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.c.t.Execute(ctx, listRequest(c.c.proto, "big", false))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) < 2 {
		t.Fatalf("the kernel listed %d entries in %d message(s); the test needs several", n, len(msgs))
	}
	got, err := c.List(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != n || got.Elements != n {
		t.Fatalf("List: %d entries (header says %d) from %d messages, want %d", len(got.Entries), got.Elements, len(msgs), n)
	}
	gk := keys(got.Entries)
	for _, e := range want {
		if g, ok := gk[e.Key()]; !ok || g.Comment != "c" {
			t.Fatalf("List lacks %v", e)
		}
	}
	// `ipset save` of this many commented entries took minutes in the
	// emulated VM; its header count is the cross-check here (small sets are
	// compared entry by entry with ipset save elsewhere).
	if out := ns.Exec(t, "ipset", "list", "-t", "big"); !strings.Contains(out, fmt.Sprintf("Number of entries: %d\n", n)) {
		t.Errorf("ipset list -t big:\n%s", out)
	}
}

func TestIntegrationContextBoundsCalls(t *testing.T) {
	c, _ := newTestClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Create(ctx, Set{Name: "x", Type: HashIP}); !errors.Is(err, context.Canceled) {
		t.Errorf("create with a cancelled context: %v", err)
	}
	// The client still works afterwards.
	if err := c.Create(ctxT(t), Set{Name: "x", Type: HashIP}); err != nil {
		t.Errorf("create after a cancelled call: %v", err)
	}
}
