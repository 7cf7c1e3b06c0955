package iptables

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", name, lineDiff(string(want), got))
	}
}

// lineDiff is a small line diff, enough to read a golden mismatch.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("-" + wl + "\n+" + gl + "\n")
		}
	}
	return b.String()
}

func TestRenderGolden(t *testing.T) {
	for _, f := range []Family{IPv4, IPv6} {
		for name, o := range optionCases(f) {
			base := strings.ToLower(f.String()) + "-" + name
			r := sample(f, o)
			ipt, err := RenderIPTables(r, nil)
			if err != nil {
				t.Fatalf("%s: %v", base, err)
			}
			golden(t, base+".iptables", ipt)
			nft, err := RenderNFT(r, "")
			if err != nil {
				t.Fatalf("%s: %v", base, err)
			}
			golden(t, base+".nft", nft)
		}
	}
	empty, err := RenderIPTables(NewRuleset(IPv4, Options{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "ipv4-empty.iptables", empty)
	golden(t, "jumps.txt", RenderIPTablesJumps(nil))
}

// The rules that depend on a set being non-empty appear and disappear with it.
func TestRenderIPTablesFollowsSetContents(t *testing.T) {
	r := sample(IPv4, Options{})
	full, _ := RenderIPTables(r, nil)
	for _, want := range []string{"IPVSKIT-LOAD-BALANCER dst,dst -j IPVSKIT-LOAD-BALANCER", "IPVSKIT-LOOP-BACK dst,dst,src -j MASQUERADE",
		"-A IPVSKIT-IPVS-OUT-FILTER -s 198.18.0.5/32 -m ipvs --vproto 6 --vaddr 198.18.0.5 --vport 80 -j DROP"} {
		if !strings.Contains(full, want) {
			t.Errorf("rendered rules lack %q", want)
		}
	}
	r.Clear(LoadBalancer)
	r.Clear(LoopBack)
	r.Clear(LBNoNodeAccess)
	less, _ := RenderIPTables(r, nil)
	// (The owner chain references every set, empty or not.)
	for _, gone := range []string{"-j IPVSKIT-LOAD-BALANCER", "IPVSKIT-LOOP-BACK dst,dst,src", "IPVSKIT-IPVS-OUT-FILTER -s"} {
		if strings.Contains(less, gone) {
			t.Errorf("rules for an empty set remain: %q", gone)
		}
	}
}

func TestNFTMembersDropsCoveredNetworks(t *testing.T) {
	r := NewRuleset(IPv4, Options{})
	lb := mustAddr("198.18.0.5")
	r.Add(LoadBalancerSourceCIDR,
		AddrPortNet(lb, TCP, 80, mustPrefix("198.19.0.0/16")),
		AddrPortNet(lb, TCP, 80, mustPrefix("198.19.1.0/24")),
		AddrPortNet(lb, TCP, 81, mustPrefix("198.19.1.0/24")))
	got := nftMembers(r, LoadBalancerSourceCIDR)
	if len(got) != 2 || got[0].Net.Bits() != 16 || got[1].Port != 81 {
		t.Fatalf("want the /16 on port 80 and the /24 on port 81, got %v", got)
	}
}
