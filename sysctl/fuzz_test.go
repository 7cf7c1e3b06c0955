package sysctl

import (
	"strings"
	"testing"
)

// NormalizeKey never panics, accepts only net/ paths without empty, "." or
// ".." components, and is idempotent.
func FuzzNormalizeKey(f *testing.F) {
	for _, s := range []string{"net.ipv4.ip_forward", "net/ipv4/conf/eth0.100/arp_ignore", "net.ipv4.conf.eth0/100.x", "kernel.hostname", "net/../x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		p, err := NormalizeKey(key)
		if err != nil {
			return
		}
		if !strings.HasPrefix(p, "net/") {
			t.Fatalf("%q -> %q: not below net/", key, p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("%q -> %q: bad component %q", key, p, seg)
			}
		}
		if q, err := NormalizeKey(p); err != nil || q != p {
			t.Fatalf("NormalizeKey(%q) = %q, %v; want it unchanged", p, q, err)
		}
	})
}

// ParseKernelRelease never panics and round-trips what it returns.
func FuzzParseKernelRelease(f *testing.F) {
	for _, s := range []string{"6.1.0-56-amd64", "5.4", "4.19.325+debian", "", "9999999999999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseKernelRelease(s)
		if err != nil {
			return
		}
		if w, err := ParseKernelRelease(v.String()); err != nil || w != v {
			t.Fatalf("%q -> %v -> %v, %v", s, v, w, err)
		}
	})
}
