package healthcheck

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/inet"
)

func TestSetRefuses(t *testing.T) {
	c, _ := start(t, Config[string]{})
	good := func(typ Type) Check {
		ck := check(typ, time.Second)
		ck.DNS.Name = "example.com"
		ck.Func = func(context.Context) error { return nil }
		return ck
	}
	for _, tc := range []struct {
		path, value string
		edit        func(*Check)
	}{
		{"Type", "Type(0)", func(c *Check) { c.Type = 0 }},
		{"Type", "Type(9)", func(c *Check) { c.Type = 9 }},
		{"Interval", "0s", func(c *Check) { c.Interval = 0 }},
		{"Interval", "-1s", func(c *Check) { c.Interval = -time.Second }},
		{"Timeout", "2s", func(c *Check) { c.Timeout = 2 * time.Second }},
		{"Timeout", "-1ns", func(c *Check) { c.Timeout = -1 }},
		{"Jitter", "1s", func(c *Check) { c.Jitter = time.Second }},
		{"RetryInterval", "-1ns", func(c *Check) { c.RetryInterval = -1 }},
		{"Rise", "0", func(c *Check) { c.Rise = 0 }},
		{"Fall", "-1", func(c *Check) { c.Fall = -1 }},
		{"HTTP.Path", "healthz", func(c *Check) { c.Type, c.HTTP.Path = HTTP, "healthz" }},
		{"HTTP.Path", "http://x/healthz", func(c *Check) { c.Type, c.HTTP.Path = HTTP, "http://x/healthz" }},
		{"HTTP.Path", "/a b", func(c *Check) { c.Type, c.HTTP.Path = HTTPS, "/a b" }},
		{"HTTP.Host", "a/b", func(c *Check) { c.Type, c.HTTP.Host = HTTP, "a/b" }},
		{"HTTP.Status[1]", "20", func(c *Check) { c.Type, c.HTTP.Status = HTTP, []int{200, 20} }},
		{"HTTP.BodyRegexp", "(", func(c *Check) { c.Type, c.HTTP.BodyRegexp = HTTP, "(" }},
		{"DNS.Name", "a..b", func(c *Check) { c.Type, c.DNS.Name = DNS, "a..b" }},
		{"DNS.Name", "", func(c *Check) { c.Type, c.DNS.Name = DNS, "" }},
		{"DNS.Type", "AXFR", func(c *Check) { c.Type, c.DNS.Type = DNS, "AXFR" }},
		{"DNS.RCode", "16", func(c *Check) { c.Type, c.DNS.RCode = DNS, 16 }},
		{"Func", "", func(c *Check) { c.Type, c.Func = Func, nil }},
	} {
		ck := good(TCP)
		tc.edit(&ck)
		err := c.Set("x", Target{Check: ck})
		var bad inet.InputError
		if !errors.As(err, &bad) {
			t.Errorf("%s = %q: %v, want an inet.InputError", tc.path, tc.value, err)
			continue
		}
		f := bad.Fields()
		if len(f) != 1 || f[0].Path != "Target.Check."+tc.path || f[0].Value != tc.value || f[0].Reason == "" {
			t.Errorf("%s = %q: refused as %v", tc.path, tc.value, f)
		}
	}
	if c.Len() != 0 {
		t.Errorf("%d targets after refusals, want none", c.Len())
	}
	for _, typ := range []Type{TCP, HTTP, HTTPS, DNS, Func} {
		if err := c.Set("ok", Target{Check: good(typ)}); err != nil {
			t.Errorf("%v: %v", typ, err)
		}
	}
}

func TestReplaceRefusesAll(t *testing.T) {
	c, _ := start(t, Config[string]{})
	ok := check(TCP, time.Second)
	bad := ok
	bad.Interval, bad.Rise = 0, 0
	err := c.Replace(map[string]Target{"a": {Check: ok}, "b": {Check: bad}})
	var v *ValidationError
	if !errors.As(err, &v) || len(v.Fields()) != 2 || !strings.Contains(err.Error(), `targets[b].Check.Interval: "0s"`) {
		t.Fatalf("Replace: %v; want both of b's fields named", err)
	}
	if c.Len() != 0 {
		t.Errorf("Replace with a bad target added %d", c.Len())
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config[int]
		path string
	}{
		{Config[int]{NetNS: -1}, "Config.NetNS"},
		{Config[int]{Workers: -2}, "Config.Workers"},
	} {
		_, err := New(&tc.cfg)
		var bad inet.InputError
		if !errors.As(err, &bad) || bad.Fields()[0].Path != tc.path {
			t.Errorf("New(%+v): %v, want %s refused", tc.cfg, err, tc.path)
		}
	}
}
