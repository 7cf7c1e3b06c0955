package ipset

import (
	"errors"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/inet"
)

// Update changes several sets in one call; `ipset save` shows the result.
func TestIntegrationUpdateManySets(t *testing.T) {
	c, ns := newTestClient(t)
	ctx := ctxT(t)
	ips := Set{Name: "u-ips", Type: HashIP, Family: inet.IPv4}
	ports := Set{Name: "u-ipport", Type: HashIPPort, Family: inet.IPv4}
	for _, s := range []Set{ips, ports} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	old := Entry{IP: mustAddr("198.18.0.9")}
	if err := c.Add(ctx, ips.Name, old); err != nil {
		t.Fatal(err)
	}
	err := c.Update(ctx,
		Change{Set: ips, Add: []Entry{{IP: mustAddr("198.18.0.1")}, {IP: mustAddr("198.18.0.2")}}, Del: []Entry{old}},
		Change{Set: ports, Add: []Entry{{IP: mustAddr("198.18.0.1"), Proto: TCP, Port: 80}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	save := ns.Exec(t, "ipset", "save")
	for _, want := range []string{"add u-ips 198.18.0.1", "add u-ips 198.18.0.2", "add u-ipport 198.18.0.1,tcp:80"} {
		if !strings.Contains(save, want) {
			t.Errorf("ipset save lacks %q:\n%s", want, save)
		}
	}
	if strings.Contains(save, "198.18.0.9") {
		t.Errorf("the deleted entry is still there:\n%s", save)
	}
	// Adding what is there and deleting what is not are not errors.
	if err := c.Update(ctx, Change{Set: ips, Add: []Entry{{IP: mustAddr("198.18.0.1")}}, Del: []Entry{old}}); err != nil {
		t.Fatalf("idempotent Update: %v", err)
	}
	// An entry that does not fit its set: a *ValidationError naming it, and
	// nothing of the call is applied.
	err = c.Update(ctx,
		Change{Set: ips, Add: []Entry{{IP: mustAddr("198.18.0.3")}}},
		Change{Set: ports, Add: []Entry{{IP: mustAddr("198.18.0.4")}}}, // no protocol and port
	)
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "changes[1].add[0]") {
		t.Fatalf("err = %v, want a *ValidationError naming changes[1].add[0]", err)
	}
	if save := ns.Exec(t, "ipset", "save"); strings.Contains(save, "198.18.0.3") {
		t.Errorf("an invalid Update applied part of itself:\n%s", save)
	}
}
