package inet

import (
	"errors"
	"strings"
)

// ErrNotSupported is wrapped by every error that says the running kernel (or
// operating system) lacks a feature, in every ipvskit package: each
// re-exports it under its own name (ipvs.ErrNotSupported,
// proxier.ErrNotSupported, ...), and all of them are this one value, so
// errors.Is(err, inet.ErrNotSupported) works whichever package refused.
var ErrNotSupported = errors.New("not supported")

// UnsupportedFeatureError says the running kernel lacks a feature, and which
// module provides it. Every package's probes (ipvs.Client.ProbeScheduler,
// dummy.Client.Probe, ipset.Client.TypeRevision, conntrack.Client.Probe, the
// iptables back ends' Probe) and proxier.Preflight return it;
// proxier.UnsupportedFeatureError is the same type.
// errors.Is(err, ErrNotSupported) is true; the kernel's own answer, if any,
// is wrapped too.
type UnsupportedFeatureError struct {
	// Feature names what is missing, e.g. "IPVS scheduler sh" or
	// "nftables ct expression (IPv6)".
	Feature string
	// Module is the kernel module that provides it, e.g. "ip_vs_sh"; a
	// parenthesised note may follow when the name differs between kernel
	// versions.
	Module string
	// MinKernel is the first kernel version that has the feature when that
	// matters (e.g. "5.6"), or "".
	MinKernel string
	// Err is what the kernel answered, or nil.
	Err error
}

func (e *UnsupportedFeatureError) Error() string {
	var b strings.Builder
	b.WriteString(e.Feature)
	b.WriteString(": not supported by the kernel")
	if e.Module != "" {
		b.WriteString(" (module " + e.Module + " not loaded)")
	}
	if e.MinKernel != "" {
		b.WriteString(" (needs Linux " + e.MinKernel + " or later)")
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Is reports whether target is ErrNotSupported.
func (e *UnsupportedFeatureError) Is(target error) bool { return target == ErrNotSupported }

// Unwrap returns the kernel's answer.
func (e *UnsupportedFeatureError) Unwrap() error { return e.Err }
