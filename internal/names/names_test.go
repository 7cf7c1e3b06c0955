package names

import "testing"

func TestCheckInstance(t *testing.T) {
	for _, ok := range []string{"ipvskit", "a", "lb-a", "node7", "abcdefghijkl"} {
		if err := CheckInstance(ok); err != nil {
			t.Errorf("CheckInstance(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "abcdefghijklm", "Ipvskit", "7up", "-a", "a-", "a_b", "a b", "a\x00", "a\r", "kube", "kube-proxy", "kubernetes", "docker", "docker-user", "a-6", "filter", "nat", "mangle", "raw", "security"} {
		if err := CheckInstance(bad); err == nil {
			t.Errorf("CheckInstance(%q) = nil, want an error", bad)
		}
	}
}

func TestDerived(t *testing.T) {
	if got := Link("ipvskit", false); got != "ipvskit0" {
		t.Errorf("Link = %q", got)
	}
	if got := Link("ipvskit", true); got != "kube-ipvs0" {
		t.Errorf("Link(kube) = %q", got)
	}
	if got := Prefix("lb-a", false); got != "LB-A" {
		t.Errorf("Prefix = %q", got)
	}
	if got := Table("lb-a", true); got != "kube-proxy" {
		t.Errorf("Table(kube) = %q", got)
	}
	if got := Mark("lb-a"); got != "ipvskit:lb-a" {
		t.Errorf("Mark = %q", got)
	}
	// The longest instance gives a link name the kernel takes (15 bytes).
	if n := Link("abcdefghijkl", false); len(n) > 15 {
		t.Errorf("Link of a %d-byte instance is %d bytes", MaxInstance, len(n))
	}
}
