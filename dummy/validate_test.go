package dummy

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/names"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"kube-ipvs0", "a", "x.y_z-1", "fifteen-bytes-x"} {
		if err := validateName(ok); err != nil {
			t.Errorf("validateName(%q) = %v; want nil", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "sixteen-bytes-xx", "a/b", "a:b", "a b", "tab\t", "é"} {
		err := validateName(bad)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != "name" || ve.Value != bad || !strings.Contains(err.Error(), "name") {
			t.Errorf("validateName(%q) = %v; want a *ValidationError for field name", bad, err)
		}
	}
}

func TestValidateAddr(t *testing.T) {
	for _, ok := range []string{"198.18.0.1", "2001:db8::1", "10.96.0.1"} {
		if err := validateAddr("addr", netip.MustParseAddr(ok)); err != nil {
			t.Errorf("validateAddr(%s) = %v; want nil", ok, err)
		}
	}
	for _, bad := range []netip.Addr{{}, netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("::"),
		netip.MustParseAddr("224.0.0.5"), netip.MustParseAddr("ff02::1"), netip.MustParseAddr("fe80::1"),
		netip.MustParseAddr("::ffff:198.18.0.1"), netip.MustParseAddr("2001:db8::1%eth0")} {
		err := validateAddr("wanted[4]", bad)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != "wanted[4]" || ve.Value != bad.String() || ve.Reason == "" {
			t.Errorf("validateAddr(%v) = %v; want a *ValidationError for wanted[4]", bad, err)
		}
	}
}

func TestPlan(t *testing.T) {
	pp := func(ss ...string) []netip.Prefix {
		var ps []netip.Prefix
		for _, s := range ss {
			ps = append(ps, netip.MustParsePrefix(s))
		}
		return ps
	}
	aa := func(ss ...string) []netip.Addr {
		var as []netip.Addr
		for _, s := range ss {
			as = append(as, netip.MustParseAddr(s))
		}
		return as
	}
	for _, tc := range []struct {
		name     string
		have     []netip.Prefix
		wanted   []netip.Addr
		add, del []netip.Prefix
	}{
		{"empty", nil, nil, nil, nil},
		{"all new, sorted, deduplicated", nil, aa("2001:db8::1", "198.18.0.2", "198.18.0.1", "198.18.0.2"),
			pp("198.18.0.1/32", "198.18.0.2/32", "2001:db8::1/128"), nil},
		{"all extra", pp("198.18.0.1/32", "2001:db8::1/128"), nil, nil, pp("198.18.0.1/32", "2001:db8::1/128")},
		{"nothing to do", pp("198.18.0.1/32"), aa("198.18.0.1"), nil, nil},
		{"wrong prefix length is replaced", pp("198.18.0.1/24"), aa("198.18.0.1"), pp("198.18.0.1/32"), pp("198.18.0.1/24")},
		{"kernel link-local is kept", pp("fe80::1/64", "198.18.0.3/32"), aa("198.18.0.4"), pp("198.18.0.4/32"), pp("198.18.0.3/32")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := validateWanted(tc.wanted)
			if err != nil {
				t.Fatal(err)
			}
			add, del := plan(tc.have, want)
			if !slices.Equal(add, tc.add) || !slices.Equal(del, tc.del) {
				t.Fatalf("plan = add %v del %v; want add %v del %v", add, del, tc.add, tc.del)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	err := &Error{Op: "bind", Link: "kube-ipvs0", Addr: netip.MustParsePrefix("198.18.0.1/32"), Err: errors.New("file exists")}
	if got, want := err.Error(), `dummy: bind 198.18.0.1/32 on "kube-ipvs0": file exists`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	err = &Error{Op: "ensure", Link: "kube-ipvs0", Err: &LinkTypeError{Name: "kube-ipvs0", Type: "bridge"}}
	if got, want := err.Error(), `dummy: ensure "kube-ipvs0": link "kube-ipvs0" exists and is of type "bridge", not dummy: not taking it over`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}

func TestValidateOwner(t *testing.T) {
	if DefaultOwner != names.Mark(names.DefaultInstance) {
		t.Errorf("DefaultOwner %q is not the default instance's mark %q", DefaultOwner, names.Mark(names.DefaultInstance))
	}
	for _, ok := range []string{DefaultOwner, "ipvskit:lb-a", "x"} {
		if err := ValidateOwner(ok); err != nil {
			t.Errorf("ValidateOwner(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a\x00b", "a\nb", "caf\u00e9", strings.Repeat("x", 256)} {
		var ve *ValidationError
		if err := ValidateOwner(bad); !errors.As(err, &ve) || ve.Field != "Config.Owner" {
			t.Errorf("ValidateOwner(%q) = %v, want a *ValidationError for Config.Owner", bad, err)
		}
	}
	if _, err := New(&Config{Owner: "a\nb"}); err == nil {
		t.Error("New accepted an owner with a newline")
	}
}
