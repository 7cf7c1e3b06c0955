package ipset

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

func TestIntegrationPerfQuick(t *testing.T) {
	entries := make([]Entry, 100000)
	for i := range entries {
		entries[i] = Entry{IP: netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), Proto: TCP, Port: uint16(1000 + i%50)}
	}
	s := Set{Name: "bench", Type: HashIPPort, MaxElem: 1 << 20}
	var text bytes.Buffer
	WriteText(&text, []SetInfo{{Set: s, Entries: entries}})
	for r := 0; r < 3; r++ {
		ns := testutil.NewNetNS(t)
		c, err := New(&Config{NetNS: ns.Handle()})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := c.Replace(context.Background(), s, entries); err != nil {
			t.Fatal(err)
		}
		d1 := time.Since(start)
		c.Close()
		ns2 := testutil.NewNetNS(t)
		start = time.Now()
		if _, err := ns2.TryExec(t, text.Bytes(), "ipset", "restore"); err != nil {
			t.Fatal(err)
		}
		d2 := time.Since(start)
		t.Logf("replace %v restore %v ratio %.2f", d1, d2, float64(d1)/float64(d2))
	}
}
