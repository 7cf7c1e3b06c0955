package ipset_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/ipset"
	"github.com/ipvskit/ipvskit/ipset/internal/contract"
)

// The Client meets the contract that ipsettest.Fake is held to, in a fresh
// namespace per expectation; ipset(8) makes other programs' sets and is
// the oracle, an iptables rule is the other program's reference.
func TestIntegrationContract(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.World {
		ns := testutil.NewNetNS(t)
		c, err := ipset.New(&ipset.Config{NetNS: ns.Handle()})
		if errors.Is(err, ipset.ErrNotSupported) {
			testutil.Missing(t, "ipset (module ip_set)", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return contract.World{
			Sets: c,
			Foreign: func(t *testing.T, s ipset.Set, entries ...ipset.Entry) {
				var b strings.Builder
				if err := ipset.WriteText(&b, []ipset.SetInfo{{Set: s, Entries: entries}}); err != nil {
					t.Fatal(err)
				}
				if _, err := ns.TryExec(t, []byte(b.String()), "ipset", "restore"); err != nil {
					t.Fatalf("ipset restore: %v\n%s", err, b.String())
				}
			},
			Reference: func(t *testing.T, name string) func(t *testing.T) {
				rule := []string{"OUTPUT", "-m", "set", "--match-set", name, "dst", "-j", "RETURN"}
				ns.Exec(t, "iptables", append([]string{"-w", "-A"}, rule...)...)
				return func(t *testing.T) { ns.Exec(t, "iptables", append([]string{"-w", "-D"}, rule...)...) }
			},
			Oracle: func(t *testing.T) []ipset.SetInfo {
				out := ns.Exec(t, "ipset", "save")
				sets, err := ipset.ParseText(strings.NewReader(out))
				if err != nil {
					t.Fatalf("parsing ipset save: %v\n%s", err, out)
				}
				return sets
			},
		}
	})
}
