package iptables

import (
	"os"
	"os/exec"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// A Ruleset built from any input either fails Validate or renders a script
// that nft accepts (checked with nft -c in a fresh namespace when root and
// nft are there; rendered only otherwise).
func FuzzRenderNFT(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{0x20, 198, 19, 0, 0, 16, 1, 198, 18, 0, 1, 6, 0, 80, 9, 198, 18, 0, 5, 6, 0, 80, 198, 19, 1, 0, 24})
	f.Add([]byte{0x42, 4, 'c', 'n', 'i', '0', 10, 0, 0, 0, 0, 6, 0x75, 0x30, 17, 198, 18, 0, 6})
	f.Add([]byte{0x13, 0, 1, 0, 0, 1, 0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 17, 0, 53})
	var ns *testutil.NetNS
	if _, err := exec.LookPath("nft"); err == nil && os.Geteuid() == 0 {
		ns = testutil.NewNetNS(f)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzRuleset(data)
		if r.Validate() != nil {
			return
		}
		script, err := RenderNFT(r, "")
		if err != nil {
			t.Fatalf("a valid ruleset did not render: %v", err)
		}
		if ns == nil {
			return
		}
		if out, err := ns.TryExec(t, []byte(script), "nft", "-c", "-f", "-"); err != nil {
			t.Fatalf("nft -c refused the script of a valid ruleset: %v %s\n%s", err, out, script)
		}
	})
}
