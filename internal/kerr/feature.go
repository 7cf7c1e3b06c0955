package kerr

import (
	"context"
	"errors"
	"sync"

	"github.com/ipvskit/ipvskit/inet"
)

// Feature is one kernel feature a client can probe for: what it is called
// in errors, the module that provides it and the first kernel that has it.
// Each package names its features as values (ipvs: one per scheduler;
// dummy: dummy links; conntrack: ctnetlink; iptables: each nftables object
// kind), and its probe answers for one of them.
type Feature struct {
	// Name says what the feature is, e.g. "IPVS scheduler sh"; it is the
	// key of the feature's answer in a Probes.
	Name string
	// Module is the kernel module that provides it, e.g. "ip_vs_sh"; a
	// parenthesised note may follow when the name differs between kernel
	// versions.
	Module string
	// MinKernel is the first kernel version that has it when that
	// matters (e.g. "6.2"), or "".
	MinKernel string
}

// Missing returns the error that says the kernel lacks f, wrapping the
// kernel's answer err (which may be nil).
func (f Feature) Missing(err error) *inet.UnsupportedFeatureError {
	return &inet.UnsupportedFeatureError{Feature: f.Name, Module: f.Module, MinKernel: f.MinKernel, Err: err}
}

// Probes remembers the answers of one client's feature probes, so that each
// probe asks the kernel of the client's namespace once: the first Run of a
// feature probes, later ones return the same answer. Only answers are kept:
// nil (the feature is there) and an error wrapping inet.ErrNotSupported (it
// is not); any other error (a canceled context, a closed client, a socket
// error) is returned and the next Run probes again. A client made anew
// probes anew, so a module loaded since is seen; a client's Close calls
// Forget, so that a probe of a closed client fails as its other calls do.
// The zero value is ready; it is safe for concurrent use (probes run one at
// a time).
type Probes struct {
	mu      sync.Mutex
	answers map[string]error
}

// Run returns the answer for f, calling probe the first time. A done ctx
// is an error even when the answer is known, as every call of a client
// that talks to the kernel fails then.
func (p *Probes) Run(ctx context.Context, f Feature, probe func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err, ok := p.answers[f.Name]; ok {
		return err
	}
	err := probe(ctx)
	if err == nil || errors.Is(err, inet.ErrNotSupported) {
		if p.answers == nil {
			p.answers = map[string]error{}
		}
		p.answers[f.Name] = err
	}
	return err
}

// Forget drops every answer: the next Run of each feature probes again.
func (p *Probes) Forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers = nil
}
