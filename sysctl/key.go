package sysctl

import (
	"strings"
)

// NormalizeKey returns key as a path below /proc/sys ("net/ipv4/ip_forward")
// and checks that it is a per-namespace key, that is below net/. It accepts
// the dotted form of sysctl(8) too ("net.ipv4.ip_forward"; in that form a '/'
// stands for a '.' inside a component, as in "net.ipv4.conf.eth0/100.rp_filter").
// Whichever of '.' and '/' comes first in key decides its form. The error is a
// *ValidationError for field "key".
//
// Keys outside net/ are refused because they are not per network namespace:
// writing one "in a namespace" would change the whole machine.
func NormalizeKey(key string) (string, error) {
	bad := func(reason string) (string, error) {
		return "", &ValidationError{Field: "key", Value: key, Reason: reason}
	}
	p := key
	if dot, slash := strings.IndexByte(key, '.'), strings.IndexByte(key, '/'); dot >= 0 && (slash < 0 || dot < slash) {
		p = strings.Map(func(r rune) rune {
			switch r {
			case '.':
				return '/'
			case '/':
				return '.'
			}
			return r
		}, key)
	}
	if p == "" {
		return bad("empty")
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return bad("has an empty component")
		case ".", "..":
			return bad("has a " + seg + " component")
		}
		for _, r := range seg {
			if r <= ' ' || r == 0x7f {
				return bad("contains a space or control character")
			}
		}
	}
	if !strings.HasPrefix(p, "net/") {
		return bad("not a per-namespace key: only keys below net/ are allowed")
	}
	return p, nil
}

// validateValue checks a value to write.
func validateValue(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return &ValidationError{Field: field, Value: v, Reason: "empty"}
	}
	if strings.ContainsAny(v, "\n\x00") {
		return &ValidationError{Field: field, Value: v, Reason: "contains a newline or NUL"}
	}
	return nil
}

// normalizeValue makes values comparable: the kernel separates the fields
// of multi-value keys with tabs and ends with a newline; users write spaces.
func normalizeValue(v string) string { return strings.Join(strings.Fields(v), " ") }

// notExist describes a missing key: which module provides it, or which
// interface it is about.
func notExist(key string) *NotExistError {
	e := &NotExistError{Key: key}
	for _, conf := range []string{"net/ipv4/conf/", "net/ipv6/conf/", "net/ipv4/neigh/", "net/ipv6/neigh/"} {
		if rest, ok := strings.CutPrefix(key, conf); ok {
			if ifname, _, ok := strings.Cut(rest, "/"); ok && ifname != "all" && ifname != "default" {
				e.Interface = ifname
				return e
			}
		}
	}
	for _, m := range modules {
		if strings.HasPrefix(key, m.prefix) {
			e.Module = m.module
			break
		}
	}
	return e
}

// modules maps key prefixes to the module that registers them.
var modules = [...]struct{ prefix, module string }{
	{"net/ipv4/vs/", "ip_vs"},
	{"net/bridge/", "br_netfilter"},
	{"net/netfilter/nf_conntrack", "nf_conntrack"},
	{"net/ipv6/", "ipv6"},
}
