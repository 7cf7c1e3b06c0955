// Package sysctltest provides Fake, an in-memory stand-in for sysctl.Client
// with the kernel's semantics and the same errors, for unit tests of code
// that applies or checks sysctl profiles.
package sysctltest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/ipvskit/ipvskit/sysctl"
)

// DefaultRelease is the kernel release a Fake reports unless told otherwise:
// Debian 12's kernel.
const DefaultRelease = "6.1.0-56-amd64"

// Fake is one network namespace's net/ sysctls in memory. New fills it with
// the values a fresh namespace has on a kernel with ip_vs and br_netfilter
// loaded; Put, Delete and Unload change that. Its methods behave like
// sysctl.Client's: same key forms and validation, same errors
// (*sysctl.NotExistError naming the module, *sysctl.Error matching EINVAL for
// a value that is not a number where the kernel wants one, ...), same
// all-or-nothing Apply. A Fake is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	release string
	keys    map[string]string
	writes  int
}

// New returns a Fake of a fresh namespace on a kernel with the given
// release ("" means DefaultRelease). net/ipv4/vs/conn_reuse_mode exists
// from 4.1 on, as in the kernel.
func New(release string) *Fake {
	if release == "" {
		release = DefaultRelease
	}
	f := &Fake{release: release, keys: map[string]string{
		"net/ipv4/ip_forward":                   "0",
		"net/ipv4/vs/conntrack":                 "0",
		"net/ipv4/vs/expire_nodest_conn":        "0",
		"net/ipv4/vs/expire_quiescent_template": "0",
		"net/bridge/bridge-nf-call-iptables":    "1",
		"net/bridge/bridge-nf-call-ip6tables":   "1",
		"net/ipv4/ip_local_port_range":          "32768\t60999",
	}}
	for _, dev := range []string{"all", "default", "lo"} {
		f.addInterfaceLocked(dev)
	}
	if v, err := sysctl.ParseKernelRelease(release); err != nil || !v.Less(sysctl.KernelVersion{Major: 4, Minor: 1}) {
		f.keys["net/ipv4/vs/conn_reuse_mode"] = "1"
	}
	return f
}

// AddInterface adds the per-interface keys (net/ipv{4,6}/conf/<name>/...) an
// interface brings, as when a link appears in the namespace.
func (f *Fake) AddInterface(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addInterfaceLocked(name)
}

func (f *Fake) addInterfaceLocked(name string) {
	for _, k := range []string{"arp_ignore", "arp_announce", "route_localnet", "rp_filter", "forwarding"} {
		f.keys["net/ipv4/conf/"+name+"/"+k] = "0"
	}
	f.keys["net/ipv6/conf/"+name+"/forwarding"] = "0"
}

// Put sets key (any form NormalizeKey takes) to value, creating it, the way
// the kernel or another program would; Put does not count as a write.
func (f *Fake) Put(key, value string) {
	k, err := sysctl.NormalizeKey(key)
	if err != nil {
		panic(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[k] = value
}

// Unload removes every key below prefix ("net/ipv4/vs/", "net/bridge/"), as
// if the module that provides them were not loaded.
func (f *Fake) Unload(prefix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	maps.DeleteFunc(f.keys, func(k, _ string) bool { return strings.HasPrefix(k, prefix) })
}

// Writes returns how many values Set and Apply have written so far
// (rollbacks included), so a test can assert that nothing was written.
func (f *Fake) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// Dump renders every key in sysctl.conf format ("net.ipv4.ip_forward = 0"),
// sorted.
func (f *Fake) Dump() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(f.keys)) {
		dotted := strings.Map(func(r rune) rune {
			switch r {
			case '/':
				return '.'
			case '.':
				return '/'
			}
			return r
		}, k)
		fmt.Fprintf(&b, "%s = %s\n", dotted, strings.Join(strings.Fields(f.keys[k]), " "))
	}
	return b.String()
}

// Close does nothing; it is there so that a Fake can stand in for a Client.
func (f *Fake) Close() error { return nil }

// KernelVersion is sysctl.Client.KernelVersion for the Fake's release.
func (f *Fake) KernelVersion() (sysctl.KernelVersion, error) {
	return sysctl.ParseKernelRelease(f.release)
}

// IPVSProfile is sysctl.Client.IPVSProfile for the Fake's release.
func (f *Fake) IPVSProfile(o *sysctl.IPVSOptions) (sysctl.Profile, error) {
	v, err := f.KernelVersion()
	if err != nil {
		return nil, err
	}
	return sysctl.IPVSProfile(v, o)
}

// Get is sysctl.Client.Get.
func (f *Fake) Get(ctx context.Context, key string) (string, error) {
	k, err := sysctl.NormalizeKey(key)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", &sysctl.Error{Op: "get", Key: k, Err: err}
	}
	v, ok := f.keys[k]
	if !ok {
		return "", missing(k)
	}
	return v, nil
}

// Set is sysctl.Client.Set.
func (f *Fake) Set(ctx context.Context, key, value string) error {
	k, err := sysctl.NormalizeKey(key)
	if err != nil {
		return err
	}
	if err := checkValue("value", value); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return &sysctl.Error{Op: "set", Key: k, Value: value, Err: err}
	}
	return f.write(k, value)
}

// Apply is sysctl.Client.Apply.
func (f *Fake) Apply(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error) {
	want, err := normalize(p)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	drift, err := f.diff(want)
	if err != nil {
		return nil, err
	}
	for i, ch := range drift {
		if err := f.write(ch.Key, ch.New); err != nil {
			for j := i - 1; j >= 0; j-- {
				f.keys[drift[j].Key] = drift[j].Old
				f.writes++
			}
			return nil, err
		}
	}
	return drift, nil
}

// Check is sysctl.Client.Check.
func (f *Fake) Check(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error) {
	want, err := normalize(p)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.diff(want)
}

func (f *Fake) diff(want []sysctl.Setting) ([]sysctl.Change, error) {
	var (
		drift []sysctl.Change
		errs  []error
	)
	for _, s := range want {
		old, ok := f.keys[s.Key]
		switch {
		case !ok:
			errs = append(errs, missing(s.Key))
		case fields(old) != fields(s.Value):
			drift = append(drift, sysctl.Change{Key: s.Key, Old: old, New: s.Value})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return drift, nil
}

// write is the kernel's proc handler: a key holding numbers takes only the
// same count of numbers (EINVAL otherwise).
func (f *Fake) write(k, v string) error {
	old, ok := f.keys[k]
	if !ok {
		return missing(k)
	}
	if isNumbers(old) && (!isNumbers(v) || len(strings.Fields(v)) > len(strings.Fields(old))) {
		return &sysctl.Error{Op: "set", Key: k, Value: v,
			Err: &fs.PathError{Op: "write", Path: "/proc/sys/" + k, Err: syscall.EINVAL}}
	}
	f.keys[k] = strings.Join(strings.Fields(v), "\t")
	f.writes++
	return nil
}

func isNumbers(v string) bool {
	fs := strings.Fields(v)
	if len(fs) == 0 {
		return false
	}
	for _, x := range fs {
		x = strings.TrimPrefix(x, "-")
		if x == "" || strings.Trim(x, "0123456789") != "" {
			return false
		}
	}
	return true
}

func fields(v string) string { return strings.Join(strings.Fields(v), " ") }

// missing builds the error the Client builds for a missing key, with the
// module or interface the key needs.
func missing(k string) error {
	e := &sysctl.NotExistError{Key: k}
	for _, conf := range []string{"net/ipv4/conf/", "net/ipv6/conf/", "net/ipv4/neigh/", "net/ipv6/neigh/"} {
		if rest, ok := strings.CutPrefix(k, conf); ok {
			if dev, _, ok := strings.Cut(rest, "/"); ok && dev != "all" && dev != "default" {
				e.Interface = dev
				return e
			}
		}
	}
	for prefix, mod := range map[string]string{
		"net/ipv4/vs/": "ip_vs", "net/bridge/": "br_netfilter",
		"net/netfilter/nf_conntrack": "nf_conntrack", "net/ipv6/": "ipv6",
	} {
		if strings.HasPrefix(k, prefix) {
			e.Module = mod
		}
	}
	return e
}

func checkValue(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return &sysctl.ValidationError{Field: field, Value: v, Reason: "empty"}
	}
	if strings.ContainsAny(v, "\n\x00") {
		return &sysctl.ValidationError{Field: field, Value: v, Reason: "contains a newline or NUL"}
	}
	return nil
}

// normalize is the Client's profile validation.
func normalize(p sysctl.Profile) ([]sysctl.Setting, error) {
	out := make([]sysctl.Setting, 0, len(p))
	seen := map[string]int{}
	for i, s := range p {
		field := fmt.Sprintf("profile[%d]", i)
		k, err := sysctl.NormalizeKey(s.Key)
		if err != nil {
			var ve *sysctl.ValidationError
			errors.As(err, &ve)
			ve.Field = field + ".Key"
			return nil, ve
		}
		if err := checkValue(field+".Value", s.Value); err != nil {
			return nil, err
		}
		if j, ok := seen[k]; ok {
			if fields(out[j].Value) != fields(s.Value) {
				return nil, &sysctl.ValidationError{Field: field + ".Value", Value: s.Value,
					Reason: fmt.Sprintf("key %s is also set to %q", k, out[j].Value)}
			}
			continue
		}
		seen[k] = len(out)
		s.Key = k
		out = append(out, s)
	}
	return out, nil
}
