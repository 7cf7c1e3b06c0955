package ipset

import (
	"context"
	"net/netip"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

func TestIntegrationSmoke(t *testing.T) {
	ns := testutil.NewNetNS(t)
	c, err := New(&Config{NetNS: ns.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	t.Log("proto", c.Protocol())
	if err := c.Create(ctx, Set{Name: "a", Type: HashIPPort, Timeouts: true, Counters: true, Comment: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, Set{Name: "b", Type: BitmapPort}); err != nil {
		t.Fatal(err)
	}
	err = c.Add(ctx, "a", Entry{IP: netip.MustParseAddr("198.18.0.1"), Proto: TCP, Port: 80, Comment: "hi"},
		Entry{IP: netip.MustParseAddr("198.18.0.2"), Proto: UDP, Port: 53})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Add(ctx, "b", Entry{Port: 80}); err != nil {
		t.Fatal(err)
	}
	t.Log(ns.Exec(t, "ipset", "save"))
	s, err := c.ListAll(ctx, false)
	t.Logf("%+v %v", s, err)
}
