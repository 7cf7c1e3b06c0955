package conformance

import (
	"slices"
	"testing"
)

// TestIdleRemoved runs on any host: the comparison tolerates exactly the
// idle weight-0 difference and nothing near it.
func TestIdleRemoved(t *testing.T) {
	const (
		vs   = "198.18.100.9:80"
		vs6  = "[2001:db8:100::9]:80"
		rs1  = "198.18.11.2:8080"
		rs2  = "198.18.12.2:8080"
		rs61 = "[2001:db8:11::2]:8080"
	)
	// kube-proxy's node before (both endpoints) and after the removal of
	// endpoint 1.
	before := []string{"-A -t " + vs + " -s rr", "-a -t " + vs + " -r " + rs1 + " -m -w 1", "-a -t " + vs + " -r " + rs2 + " -m -w 1",
		"-A -t " + vs6 + " -s rr", "-a -t " + vs6 + " -r " + rs61 + " -m -w 1",
		"-A -u " + vs + " -s rr", "-a -u " + vs + " -r " + rs1 + " -m -w 1"}
	after := []string{"-A -t " + vs + " -s rr", "-a -t " + vs + " -r " + rs2 + " -m -w 1", "-A -t " + vs6 + " -s rr", "-A -u " + vs + " -s rr"}
	list := `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  ` + vs + ` rr
  -> ` + rs1 + `             Masq    0      0          0
  -> ` + rs2 + `             Masq    1      0          3
TCP  ` + vs6 + ` rr
  -> ` + rs61 + `             Masq    0      0          0
UDP  ` + vs + ` rr
  -> ` + rs1 + `             Masq    0      0          0
`
	busy := `TCP  ` + vs + ` rr
  -> ` + rs1 + `             Masq    0      1          0
  -> ` + rs2 + `             Masq    0      0          1
`
	idle := connections(list)
	if got := idle["-t "+vs+" -r "+rs2]; got != 3 {
		t.Fatalf("connections of %s: %d, want 3 (%v)", rs2, got, idle)
	}
	had := destinations(before)
	for _, c := range []struct {
		name   string
		kp, ik []string // ipvsadm -Sn of each node now
		had    map[string]string
		conns  map[string]int
		ok     bool
	}{
		{"idle TCP destination ipvskit keeps at weight 0", after, append(slices.Clone(after), "-a -t "+vs+" -r "+rs1+" -m -w 0"), had, idle, true},
		{"the same over IPv6", after, append(slices.Clone(after), "-a -t "+vs6+" -r "+rs61+" -m -w 0"), had, idle, true},
		{"ipvskit's destination has connections", after, append(slices.Clone(after), "-a -t "+vs+" -r "+rs1+" -m -w 0"), had, connections(busy), false},
		{"no connection count read for it", after, append(slices.Clone(after), "-a -t "+vs+" -r "+rs1+" -m -w 0"), had, map[string]int{}, false},
		{"ipvskit's destination has weight 1", after, append(slices.Clone(after), "-a -t "+vs+" -r "+rs1+" -m -w 1"), had, idle, false},
		{"kube-proxy never had it", after, append(slices.Clone(after), "-a -t "+vs+" -r "+rs1+" -m -w 0"), destinations(after), idle, false},
		{"kube-proxy still has it, at weight 1", append(slices.Clone(after), "-a -t "+vs+" -r "+rs1+" -m -w 1"),
			append(slices.Clone(after), "-a -t "+vs+" -r "+rs1+" -m -w 0"), had, idle, false},
		{"another forwarding method", after, append(slices.Clone(after), "-a -t "+vs+" -r "+rs1+" -g -w 0"), had, idle, false},
		{"a UDP destination (kube-proxy and ipvskit delete it at once)", after, append(slices.Clone(after), "-a -u "+vs+" -r "+rs1+" -m -w 0"), had, idle, false},
		{"a destination only kube-proxy has", append(slices.Clone(after), "-a -t "+vs+" -r "+rs1+" -m -w 0"), after, had, idle, false},
		{"a virtual server ipvskit keeps", after[1:], after, had, idle, false},
	} {
		d := diff(sorted(slices.Clone(c.kp)), sorted(slices.Clone(c.ik)))
		if len(d) == 0 {
			t.Fatalf("%s: no difference to judge", c.name)
		}
		bad, ok := idleRemoved(d, c.kp, c.had, c.conns)
		if c.ok && (len(bad) > 0 || len(ok) != len(d)) {
			t.Errorf("%s: not tolerated: %q", c.name, bad)
		}
		if !c.ok && len(ok) > 0 {
			t.Errorf("%s: tolerated %q", c.name, ok)
		}
	}
	// Beside the tolerated line, any other difference still fails.
	ik := append(slices.Clone(after), "-a -t "+vs+" -r "+rs1+" -m -w 0", "-a -t "+vs6+" -r "+rs61+" -m -w 1")
	bad, ok := idleRemoved(diff(sorted(slices.Clone(after)), sorted(ik)), after, had, idle)
	if len(ok) != 1 || len(bad) != 1 || bad[0] != "+ -a -t "+vs6+" -r "+rs61+" -m -w 1" {
		t.Errorf("idle line beside another difference: bad %q, ok %q", bad, ok)
	}
}
