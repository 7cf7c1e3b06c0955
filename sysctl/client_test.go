package sysctl

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// mapStore is the kernel side in memory, for the logic above it.
type mapStore map[string]string

func (m mapStore) do(ctx context.Context, f func(keyRW) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f(m)
}
func (m mapStore) close() error { return nil }
func (m mapStore) get(k string) (string, error) {
	v, ok := m[k]
	if !ok {
		return "", &fs.PathError{Op: "open", Path: "/proc/sys/" + k, Err: fs.ErrNotExist}
	}
	return v + "\n", nil
}
func (m mapStore) set(k, v string) error {
	if _, ok := m[k]; !ok {
		return &fs.PathError{Op: "open", Path: "/proc/sys/" + k, Err: fs.ErrNotExist}
	}
	m[k] = v
	return nil
}

// ipvsKernel is a fresh namespace of a kernel with ip_vs and br_netfilter.
func ipvsKernel() mapStore {
	return mapStore{
		"net/ipv4/vs/conntrack": "0", "net/ipv4/vs/conn_reuse_mode": "1",
		"net/ipv4/vs/expire_nodest_conn": "0", "net/ipv4/vs/expire_quiescent_template": "0",
		"net/ipv4/ip_forward": "0", "net/ipv4/conf/all/route_localnet": "0",
		"net/bridge/bridge-nf-call-iptables": "1",
		"net/ipv4/conf/all/arp_ignore":       "0", "net/ipv4/conf/all/arp_announce": "0",
	}
}

// The kernel version, read through the uname seam, decides whether the
// profile sets conn_reuse_mode: only from 4.1 up to, not including, 5.9.
func TestIPVSProfileConnReuseModeByKernel(t *testing.T) {
	for _, tc := range []struct {
		release string
		set     bool
	}{
		{"4.0.9", false},            // before the key existed
		{"4.1.0", true},             //
		{"5.4.0-150-generic", true}, // Ubuntu 20.04
		{"5.8.18", true},            //
		{"5.9.0", false},            // the kernel's default is safe
		{"6.1.0-56-amd64", false},   // Debian 12, the VM's kernel
	} {
		t.Run(tc.release, func(t *testing.T) {
			s := ipvsKernel()
			c := &Client{s: s, release: func() (string, error) { return tc.release, nil }}
			p, err := c.IPVSProfile(nil)
			if err != nil {
				t.Fatal(err)
			}
			changes, err := c.Apply(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.ContainsFunc(changes, func(ch Change) bool {
				return ch.Key == "net/ipv4/vs/conn_reuse_mode" && ch.Old == "1" && ch.New == "0"
			})
			if got != tc.set {
				t.Fatalf("conn_reuse_mode changed = %v; want %v (changes %v)", got, tc.set, changes)
			}
			if want := map[bool]string{true: "0", false: "1"}[tc.set]; s["net/ipv4/vs/conn_reuse_mode"] != want {
				t.Fatalf("conn_reuse_mode = %s; want %s", s["net/ipv4/vs/conn_reuse_mode"], want)
			}
			// Every other IPVS setting is made whatever the kernel.
			for _, k := range []string{"net/ipv4/vs/conntrack", "net/ipv4/vs/expire_nodest_conn", "net/ipv4/vs/expire_quiescent_template", "net/ipv4/ip_forward", "net/ipv4/conf/all/route_localnet"} {
				if s[k] != "1" {
					t.Errorf("%s = %s; want 1", k, s[k])
				}
			}
			if s["net/ipv4/conf/all/arp_ignore"] != "0" {
				t.Error("strict ARP was set without StrictARP")
			}
		})
	}
	c := &Client{s: ipvsKernel(), release: func() (string, error) { return "", errors.New("uname failed") }}
	if _, err := c.IPVSProfile(nil); err == nil || !strings.Contains(err.Error(), "uname failed") {
		t.Fatalf("IPVSProfile with a failing uname: %v", err)
	}
}

func TestIPVSProfileOptions(t *testing.T) {
	v := KernelVersion{6, 1, 0}
	p, err := IPVSProfile(v, &IPVSOptions{StrictARP: true, ARPInterfaces: []string{"eth0", "eth0.100"}, NoBridgeNetfilter: true})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range p {
		keys = append(keys, s.Key+"="+s.Value)
		if s.Why == "" {
			t.Errorf("%s has no reason", s.Key)
		}
	}
	want := []string{"net/ipv4/vs/conntrack=1", "net/ipv4/vs/expire_nodest_conn=1", "net/ipv4/vs/expire_quiescent_template=1",
		"net/ipv4/ip_forward=1", "net/ipv4/conf/all/route_localnet=1",
		"net/ipv4/conf/eth0/arp_ignore=1", "net/ipv4/conf/eth0/arp_announce=2",
		"net/ipv4/conf/eth0.100/arp_ignore=1", "net/ipv4/conf/eth0.100/arp_announce=2"}
	if !slices.Equal(keys, want) {
		t.Fatalf("profile = %v; want %v", keys, want)
	}
	p, _ = IPVSProfile(v, nil)
	if !slices.ContainsFunc(p, func(s Setting) bool { return s.Key == "net/bridge/bridge-nf-call-iptables" && s.Value == "1" }) {
		t.Error("the default profile lacks bridge-nf-call-iptables=1")
	}
	ipv6fwd := func(s Setting) bool { return s.Key == "net/ipv6/conf/all/forwarding" && s.Value == "1" }
	if slices.ContainsFunc(p, ipv6fwd) {
		t.Error("the default profile sets IPv6 forwarding")
	}
	if p, _ = IPVSProfile(v, &IPVSOptions{IPv6: true}); !slices.ContainsFunc(p, ipv6fwd) {
		t.Error("IPv6: true does not set net/ipv6/conf/all/forwarding=1")
	}
	for _, tc := range []struct {
		o     IPVSOptions
		field string
	}{
		{IPVSOptions{ARPInterfaces: []string{"eth0"}}, "ARPInterfaces"},
		{IPVSOptions{StrictARP: true, ARPInterfaces: []string{"eth0", "a/b"}}, "ARPInterfaces[1]"},
		{IPVSOptions{StrictARP: true, ARPInterfaces: []string{"all"}}, "ARPInterfaces[0]"},
		{IPVSOptions{StrictARP: true, ARPInterfaces: []string{"sixteen-bytes-xx"}}, "ARPInterfaces[0]"},
	} {
		var ve *ValidationError
		if _, err := IPVSProfile(v, &tc.o); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("IPVSProfile(%+v) = %v; want a *ValidationError for %s", tc.o, err, tc.field)
		}
	}
}

func TestParseKernelRelease(t *testing.T) {
	for in, want := range map[string]KernelVersion{
		"6.1.0-56-amd64": {6, 1, 0}, "5.4.0-150-generic": {5, 4, 0}, "4.19.325+debian": {4, 19, 325},
		"6.18.44-fc-v769": {6, 18, 44}, "5.9": {5, 9, 0}, "3.10.0-1160.el7.x86_64": {3, 10, 0},
	} {
		if got, err := ParseKernelRelease(in); err != nil || got != want {
			t.Errorf("ParseKernelRelease(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "linux", "6", "6-rc1", "99999999999999999999.1"} {
		if _, err := ParseKernelRelease(in); err == nil {
			t.Errorf("ParseKernelRelease(%q) succeeded", in)
		}
	}
	if !(KernelVersion{5, 8, 99}).Less(KernelVersion{5, 9, 0}) || (KernelVersion{5, 9, 0}).Less(KernelVersion{5, 9, 0}) {
		t.Error("Less is wrong")
	}
}

func TestNormalizeKey(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.ip_forward":                "net/ipv4/ip_forward",
		"net/ipv4/ip_forward":                "net/ipv4/ip_forward",
		"net.ipv4.conf.eth0/100.arp_ignore":  "net/ipv4/conf/eth0.100/arp_ignore",
		"net/ipv4/conf/eth0.100/arp_ignore":  "net/ipv4/conf/eth0.100/arp_ignore",
		"net.bridge.bridge-nf-call-iptables": "net/bridge/bridge-nf-call-iptables",
	} {
		if got, err := NormalizeKey(in); err != nil || got != want {
			t.Errorf("NormalizeKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "kernel.hostname", "vm/swappiness", "net", "/net/ipv4/ip_forward",
		"net//ipv4", "net/ipv4/../../kernel/x", "net/ipv4/ip forward", "net.ipv4."} {
		var ve *ValidationError
		if _, err := NormalizeKey(in); !errors.As(err, &ve) || ve.Field != "key" || ve.Value != in {
			t.Errorf("NormalizeKey(%q) = %v; want a *ValidationError for key", in, err)
		}
	}
}

func TestNotExistNamesModuleOrInterface(t *testing.T) {
	for key, want := range map[string]NotExistError{
		"net/ipv4/vs/conntrack":              {Module: "ip_vs"},
		"net/bridge/bridge-nf-call-iptables": {Module: "br_netfilter"},
		"net/netfilter/nf_conntrack_max":     {Module: "nf_conntrack"},
		"net/ipv4/conf/eth9/arp_ignore":      {Interface: "eth9"},
		"net/ipv6/conf/eth9/disable_ipv6":    {Interface: "eth9"},
		"net/ipv6/conf/all/disable_ipv6":     {Module: "ipv6"},
		"net/ipv4/tcp_nonexistent":           {},
	} {
		e := notExist(key)
		want.Key = key
		if *e != want {
			t.Errorf("notExist(%s) = %+v; want %+v", key, *e, want)
		}
		if !errors.Is(e, fs.ErrNotExist) || errors.Is(e, ErrNotSupported) != (want.Module != "") {
			t.Errorf("notExist(%s): errors.Is is wrong", key)
		}
		for _, part := range []string{key, want.Module, want.Interface} {
			if !strings.Contains(e.Error(), part) {
				t.Errorf("%q does not name %q", e.Error(), part)
			}
		}
	}
}

// Multi-value keys compare by their fields, not their separators.
func TestApplyComparesFields(t *testing.T) {
	s := mapStore{"net/ipv4/ip_local_port_range": "32768\t60999"}
	c := &Client{s: s}
	changes, err := c.Apply(context.Background(), Profile{{Key: "net.ipv4.ip_local_port_range", Value: "32768  60999"}})
	if err != nil || len(changes) != 0 {
		t.Fatalf("Apply of the same range with other spacing = %v, %v; want nothing", changes, err)
	}
	changes, err = c.Apply(context.Background(), Profile{{Key: "net.ipv4.ip_local_port_range", Value: "30000 60999"}})
	if err != nil || len(changes) != 1 || changes[0].Old != "32768\t60999" {
		t.Fatalf("Apply of a new range = %v, %v", changes, err)
	}
}
