package conformance

import (
	"flag"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
)

// TestConformanceWithKubeProxy applies the corpus, all cases at once (a
// kube-proxy sync costs minutes in the emulated VM), to kube-proxy's IPVS
// proxier and to ipvskit under both back ends, step by step, and compares
// kernel state and traffic after each step.
func TestConformanceWithKubeProxy(t *testing.T) {
	conform(t, corpus, false)
}

// TestConformanceNodePortsOnEveryAddress runs the node-port cases again
// with kube-proxy's default node-port addresses (all of the node's) and
// ipvskit given every node address.
func TestConformanceNodePortsOnEveryAddress(t *testing.T) {
	var cases []tcase
	for _, c := range corpus {
		if strings.Contains(c.name, "nodeport") || strings.HasPrefix(c.name, "loadbalancer") {
			cases = append(cases, c)
		}
	}
	conform(t, cases, true)
}

// only, if set, runs only the corpus cases whose names it matches (go
// test ./conformance/ -run TestConformance -cases 'loadbalancer-.*'): a
// kube-proxy sync of the whole corpus costs minutes in the emulated VM.
var only = flag.String("cases", "", "run only the corpus cases whose names match this regular expression")

func conform(t *testing.T, cases []tcase, allNodePorts bool) {
	if *only != "" {
		re := regexp.MustCompile(*only)
		cases = slices.DeleteFunc(slices.Clone(cases), func(c tcase) bool { return !re.MatchString(c.name) })
		if len(cases) == 0 {
			t.Fatalf("no corpus case matches -cases %q", *only)
		}
	}
	steps := mergedSteps(cases)
	fb := fallbackFrontends(cases)
	kpRig, iptRig, nftRig := newRig(t), newRig(t), newRig(t)
	var setup string
	var exclude, kept []string
	for _, c := range cases {
		if l, ok := leftovers[c.name]; ok {
			setup += l.script(allocOf(c.name))
			exclude = append(exclude, l.exclude(allocOf(c.name)))
			kept = append(kept, l.kept(allocOf(c.name))...)
		}
	}
	if len(exclude) > 0 {
		deliberate = append(deliberate, leftoverDifference)
	}
	for _, r := range []*rig{kpRig, iptRig, nftRig} {
		r.allNodePorts, r.exclude = allNodePorts, exclude
		if setup != "" {
			r.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+setup)
		}
	}
	ipt := newIPVSKit(t, iptRig, proxier.IPTables)
	nft := newIPVSKit(t, nftRig, proxier.NFTables)
	var kp *kubeProxy
	answered := 0
	had := map[string]string{} // every destination kube-proxy had, for the idle weight-0 difference
	for i, s := range steps {
		if i == 0 {
			kp = newKubeProxy(t, kpRig, s)
		} else {
			kp.apply(t, s)
		}
		ipt.apply(t, s)
		nft.apply(t, s)

		want := readState(t, kpRig)
		iptState, nftState := readState(t, iptRig), readState(t, nftRig)
		compareState(t, i, "iptables", want, iptState, had, fb, true)
		compareState(t, i, "nftables", want, nftState, had, fb, false)
		maps.Copy(had, destinations(want.ipvs))
		for j, s := range []kernelState{want, iptState, nftState} {
			for _, l := range kept {
				if !slices.Contains(s.ipvs, l) {
					t.Errorf("step %d: %s lost another program's %q (leftovers)", i, []string{"kube-proxy", "ipvskit (iptables)", "ipvskit (nftables)"}[j], l)
				}
			}
		}

		probes := probesOf(s)
		if i > 0 { // what the last step served is tried again: removed must be removed on both
			for _, p := range probesOf(steps[i-1]) {
				if !slices.ContainsFunc(probes, func(q probe) bool { return q.name == p.name }) {
					probes = append(probes, p)
				}
			}
		}
		probes = slices.DeleteFunc(probes, func(p probe) bool { return quiet(p, i) })
		for _, p := range probes {
			var got [3]string
			var wg sync.WaitGroup
			for j, r := range []*rig{kpRig, iptRig, nftRig} {
				wg.Go(func() { got[j] = r.outcome(t, p) })
			}
			wg.Wait()
			if strings.Contains(got[0], "answered") {
				answered++
			}
			for j, be := range []string{"iptables", "nftables"} {
				if got[j+1] != got[0] && !fallbackOutcome(p, got[0], got[j+1], fb) {
					t.Errorf("step %d, %s: %s: kube-proxy: %s; ipvskit (%s): %s", i, be, p.name, got[0], be, got[j+1])
				}
			}
			t.Logf("step %d: %s: %s", i, p.name, got[0])
		}
	}
	// The comparison means something only if kube-proxy served most of it.
	if answered < len(cases) {
		t.Errorf("only %d probes were answered by kube-proxy's node; the rig is broken", answered)
	}
}

// allocOf is the addresses of the corpus case named name: case k (from 1,
// in corpus order) owns alloc{k}, whichever cases a test runs.
func allocOf(name string) alloc {
	return alloc{k: 1 + slices.IndexFunc(corpus, func(c tcase) bool { return c.name == name })}
}

// idleCases are the corpus's cases that remove an endpoint nothing has
// sent traffic to, by name, each with the step that removes it: their
// frontends are not probed before that step, so the removed destination
// is idle on both nodes (see idleRemoved).
var idleCases = map[string]int{"update-idle-endpoint-removed": 1}

// quiet says whether p, at step i, is a probe of an idle case before its
// endpoint is removed.
func quiet(p probe, i int) bool {
	for c, removed := range idleCases {
		if strings.HasPrefix(p.name, c+"-") && i < removed {
			return true
		}
	}
	return false
}

// compareState fails on every difference no deliberate difference explains;
// full compares ipsets and iptables rules too (kube-proxy's names, iptables
// back end), otherwise only IPVS and the VIPs. had is every destination
// kube-proxy had at an earlier step (see idleRemoved); fb the frontends
// that fall back on kube-proxy's node (see fallbackRemoved).
func compareState(t *testing.T, step int, backend string, kp, ik kernelState, had map[string]string, fb []fellBack, full bool) {
	t.Helper()
	check := func(what string, a, b []string) {
		d, idle, fell := diff(a, b), []string(nil), []string(nil)
		if what == "ipvs" {
			d, idle = idleRemoved(d, kp.ipvs, had, ik.conns)
			for _, l := range idle {
				t.Logf("step %d, %s: idle destination kube-proxy deleted and ipvskit keeps at weight 0: %s", step, backend, l)
			}
			d, fell = fallbackRemoved(d, kp.ipvs, ik.ipvs, fb)
			for _, l := range fell {
				t.Logf("step %d, %s: kube-proxy's fallback to cluster endpoints, none on ipvskit's: %s", step, backend, l)
			}
		}
		for i, l := range d {
			d[i] = what + " " + l
		}
		bad, ok := undeliberate(d)
		ok = append(ok, idle...)
		ok = append(ok, fell...)
		if len(ok) > 0 {
			t.Logf("step %d, %s: %d lines of %s differ on purpose (docs/kube-proxy-differences.md)", step, backend, len(ok), what)
		}
		if len(bad) > 0 {
			t.Errorf("step %d, %s: %s differs from kube-proxy's (- kube-proxy only, + ipvskit only):\n%s",
				step, backend, what, strings.Join(bad, "\n"))
		}
	}
	check("ipvs", kp.ipvs, ik.ipvs)
	check("vips", kp.vips, ik.vips)
	if full {
		check("ipset", kp.ipsets, ik.ipsets)
		check("iptables", kp.iptables, ik.iptables)
		// The same rules must also come in the same order in each chain.
		ko, io := ruleOrder(kp.rules, "-"), ruleOrder(ik.rules, "+")
		for chain, want := range ko {
			got := io[chain]
			if !slices.Equal(sorted(slices.Clone(got)), sorted(slices.Clone(want))) {
				continue // a difference of content, reported above
			}
			if !slices.Equal(got, want) {
				t.Errorf("step %d, %s: %s has kube-proxy's rules in another order:\nkube-proxy:\n%s\nipvskit:\n%s",
					step, backend, chain, strings.Join(want, "\n"), strings.Join(got, "\n"))
			}
		}
	}
}

// mergedSteps turns the corpus into steps of one node: step i holds every
// case's step i, or its last step if it has fewer. Each case's objects are
// renamed "<case>-<name>" (and their slices' service label with them).
func mergedSteps(cases []tcase) []step {
	var per [][]step
	n := 0
	for _, c := range cases {
		steps := c.steps(allocOf(c.name))
		for i := range steps {
			steps[i] = steps[i].qualified(c.name)
		}
		per = append(per, steps)
		n = max(n, len(steps))
	}
	out := make([]step, n)
	for i := range out {
		for _, steps := range per {
			s := steps[min(i, len(steps)-1)]
			out[i].services = append(out[i].services, s.services...)
			out[i].slices = append(out[i].slices, s.slices...)
		}
	}
	return out
}

// TestConformanceLeftovers runs only the corpus's cases that start from
// another program's IPVS state (leftovers), for a quick look at them.
func TestConformanceLeftovers(t *testing.T) {
	var cases []tcase
	for _, c := range corpus {
		if _, ok := leftovers[c.name]; ok {
			cases = append(cases, c)
		}
	}
	conform(t, cases, false)
}
