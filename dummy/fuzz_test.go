package dummy

import (
	"net/netip"
	"testing"
)

// Whatever ValidateName accepts fits IFNAMSIZ and has no separator.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"kube-ipvs0", "", "..", "a/b", "sixteen-bytes-xx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if validateName(s) != nil {
			return
		}
		if len(s) == 0 || len(s) > 15 || s == "." || s == ".." {
			t.Fatalf("accepted %q", s)
		}
	})
}

// plan never plans to add what is there or to keep what is unwanted.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{198, 18, 0, 1, 32, 198, 18, 0, 2, 24}, []byte{198, 18, 0, 1})
	f.Fuzz(func(t *testing.T, haveB, wantB []byte) {
		var have []netip.Prefix
		for i := 0; i+5 <= len(haveB); i += 5 {
			a := netip.AddrFrom4([4]byte(haveB[i : i+4]))
			if p, err := a.Prefix(int(haveB[i+4]) % 33); err == nil {
				have = append(have, netip.PrefixFrom(a, p.Bits()))
			}
		}
		var wanted []netip.Addr
		for i := 0; i+4 <= len(wantB); i += 4 {
			if a := netip.AddrFrom4([4]byte(wantB[i : i+4])); validateAddr("a", a) == nil {
				wanted = append(wanted, a)
			}
		}
		want, err := validateWanted(wanted)
		if err != nil {
			t.Fatal(err)
		}
		add, del := plan(have, want)
		after := map[netip.Prefix]bool{}
		for _, p := range have {
			after[p] = true
		}
		for _, p := range add {
			if after[p] {
				t.Fatalf("adds %v, which is there", p)
			}
			after[p] = true
		}
		for _, p := range del {
			delete(after, p)
		}
		for p := range want {
			if !after[p] {
				t.Fatalf("%v wanted but missing after the plan", p)
			}
		}
		for p := range after {
			if !want[p] {
				t.Fatalf("%v unwanted but left by the plan", p)
			}
		}
	})
}
