package inet_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipset"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl"
)

// Every package's refusal of bad input is found by one errors.As, even
// wrapped, and names the field and the value.
func TestEveryPackageRefusesInOneShape(t *testing.T) {
	for _, c := range []struct {
		pkg       string
		err       error
		path, val string
	}{
		{"ipvs", errOf(ipvs.New(&ipvs.Config{NetNS: -2})), "Config.NetNS", "-2"},
		{"ipvs text", errOf(ipvsadm.UnmarshalSnapshot([]byte("-A -t 198.18.0.1:80 -s rr\n-Z\n"))), "line 2", ""},
		{"dummy", dummy.ValidateOwner("a\nb"), "Config.Owner", "a\nb"},
		{"ipset", (&ipset.Set{Name: "", Type: ipset.HashIP}).Validate(), "Name", ""},
		{"ipset text", errOf(ipset.ParseText(strings.NewReader("bogus line\n"))), "line 1", "bogus line"},
		{"iptables", errOf(iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: -2})), "NFTablesConfig.NetNS", "-2"},
		{"sysctl", errOf(sysctl.New(&sysctl.Config{NetNS: -2})), "Config.NetNS", "-2"},
		{"conntrack", (&conntrack.Filter{Protocol: 99}).Validate(), "Protocol", ""},
		{"proxier", (&proxier.State{Services: map[string]proxier.Service{"web": {}}}).Validate(&proxier.Config{}), `services["web"]`, ""},
	} {
		wrapped := fmt.Errorf("caller: %w", c.err)
		var in inet.InputError
		if !errors.As(wrapped, &in) {
			t.Errorf("%s: %v (%T) is not an inet.InputError", c.pkg, c.err, c.err)
			continue
		}
		fs := in.Fields()
		if len(fs) == 0 {
			t.Errorf("%s: %v: no fields", c.pkg, c.err)
			continue
		}
		if !strings.HasPrefix(fs[0].Path, c.path) || (c.val != "" && fs[0].Value != c.val) || fs[0].Reason == "" {
			t.Errorf("%s: first field %+v; want path %q..., value %q and a reason", c.pkg, fs[0], c.path, c.val)
		}
	}
}

func TestFieldErrorString(t *testing.T) {
	for _, c := range []struct {
		f    inet.FieldError
		want string
	}{
		{inet.FieldError{Path: "wanted[2]", Value: "198.18.300.1", Reason: "not an IP address"}, `wanted[2]: "198.18.300.1": not an IP address`},
		{inet.FieldError{Path: "name", Value: "a b\n", Reason: "not a DNS label"}, `name: "a b\n": not a DNS label`},
		{inet.FieldError{Path: "ports", Reason: "at least one is needed"}, "ports: at least one is needed"},
	} {
		if got := c.f.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.f, got, c.want)
		}
	}
}

// errOf returns the error of a call that returns a value and an error.
func errOf[T any](_ T, err error) error { return err }
