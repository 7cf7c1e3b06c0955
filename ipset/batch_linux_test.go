package ipset

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// A batch in which the set fills up part way: the entries that fit are in,
// every other one is reported as ErrSetFull naming an entry that is really
// missing, and the count of the rest is given.
func TestIntegrationBatchPartlyFull(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := ctxT(t)
	const maxElem, n = 300, 1000
	if err := c.Create(ctx, Set{Name: "f", Type: HashIPPort, MaxElem: maxElem}); err != nil {
		t.Fatal(err)
	}
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = Entry{IP: netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), Proto: TCP, Port: 443}
	}
	if msgs := len(pack(entries)) - 1; msgs < 3 {
		t.Fatalf("the entries fit in %d messages; the test needs several", msgs)
	}
	err := c.Add(ctx, "f", entries...)
	if !errors.Is(err, ErrSetFull) || !strings.Contains(err.Error(), "more entries failed") {
		t.Fatalf("add of %d entries to a set of maxelem %d: %v", n, maxElem, err)
	}
	got, lerr := c.List(ctx, "f")
	if lerr != nil || len(got.Entries) != maxElem {
		t.Fatalf("the set holds %d entries (%v), want %d", len(got.Entries), lerr, maxElem)
	}
	in := keys(got.Entries)
	var reported int
	for _, e := range unjoin(err) {
		var ie *Error
		if !errors.As(e, &ie) {
			continue
		}
		reported++
		pe, perr := ParseEntry(HashIPPort, ie.Entry)
		if perr != nil {
			t.Fatalf("error names entry %q: %v", ie.Entry, perr)
		}
		if _, ok := in[pe]; ok {
			t.Errorf("error for %s, which is in the set", ie.Entry)
		}
	}
	if reported != maxReportedErrors {
		t.Errorf("%d entries reported one by one, want %d", reported, maxReportedErrors)
	}
	if !strings.Contains(err.Error(), "684 more entries failed") {
		t.Errorf("error does not count the other %d failures: %v", n-maxElem-maxReportedErrors, err)
	}
	if out := ns.Exec(t, "ipset", "list", "-t", "f"); !strings.Contains(out, "Number of entries: 300") {
		t.Errorf("ipset list:\n%s", out)
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
