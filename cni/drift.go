package cni

import (
	"fmt"
	"strings"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
	"github.com/ipvskit/ipvskit/proxier"
)

// drift lists what Check found changed: the IPVS requests and VIPs the
// Sync of an unchanged stanza had to send (after Add, it sends none), then
// what Reconcile repaired. The Sync's netfilter rules are left out: a new
// process rewrites its rules whole, changed or not.
func drift(pl *proxier.Plan, rep *proxier.ReconcileReport) []string {
	var out []string
	if pl != nil {
		out = append(out, batchLines("ipvsadm", &pl.IPVSAdd)...)
		for _, a := range pl.Bind {
			out = append(out, fmt.Sprintf("VIP %v: missing", a))
		}
		for _, a := range pl.Unbind {
			out = append(out, fmt.Sprintf("VIP %v: not configured", a))
		}
		out = append(out, batchLines("ipvsadm", &pl.IPVSDelete)...)
	}
	if rep != nil {
		for _, d := range rep.Drift {
			out = append(out, d.String())
		}
	}
	return out
}

// batchLines is b as ipvsadm -R lines, each prefixed by what.
func batchLines(what string, b *ipvs.Batch) []string {
	if b.Len() == 0 {
		return nil
	}
	t, err := ipvsadm.MarshalBatch(b)
	if err != nil {
		return []string{fmt.Sprintf("%d IPVS requests (%v)", b.Len(), err)}
	}
	var out []string
	for l := range strings.Lines(string(t)) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, what+" "+l)
		}
	}
	return out
}

func joinDrift(d []string) string { return strings.Join(d, "; ") }
