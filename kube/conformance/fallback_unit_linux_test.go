package conformance

import (
	"fmt"
	"slices"
	"testing"
)

// TestFallbackRemoved runs on any host: the comparison tolerates exactly
// the fallback to cluster endpoints, on the fallback cases' frontends of
// the kinds they name, and nothing near it.
func TestFallbackRemoved(t *testing.T) {
	for c := range fallbackCases {
		if len(casesNamed(c)) != 1 || len(fallbackFrontends(casesNamed(c))) == 0 {
			t.Errorf("fallbackCases names %q: not a corpus case, or one without frontends that fall back", c)
		}
	}
	const internal, both = "nodeport-itp-local-without-local-endpoint", "loadbalancer-itp-local-etp-local-without-local-endpoint"
	fb := fallbackFrontends(casesNamed(internal, both, "nodeport-itp-local-with-local-endpoint"))
	a, b := allocOf(internal), allocOf(both)
	const rs1, rs2 = "198.18.11.2:8080", "198.18.12.2:8080"
	cip := fmt.Sprintf("-t %s:80", a.clusterIP())
	np := fmt.Sprintf("-t %s:%d", nodeAddr, a.nodePort(0))
	lb := fmt.Sprintf("-t %s:80", b.lbIP())
	bnp := fmt.Sprintf("-t %s:%d", nodeAddr, b.nodePort(0))
	servers := []string{"-A " + cip + " -s rr", "-A " + np + " -s rr", "-A " + lb + " -s rr", "-A " + bnp + " -s rr"}
	dests := func(vs string, rs ...string) []string {
		var out []string
		for _, r := range rs {
			out = append(out, "-a "+vs+" -r "+r+" -m -w 1")
		}
		return out
	}
	with := func(lines ...[]string) []string { return append(slices.Clone(servers), slices.Concat(lines...)...) }
	for _, c := range []struct {
		name   string
		kp, ik []string // ipvsadm -Sn of each node
		ok     bool
	}{
		{"the cluster IP of an internal-policy case", with(dests(cip, rs1, rs2)), servers, true},
		{"the external frontends of a case with both", with(dests(lb, rs1, rs2), dests(bnp, rs1, rs2)), servers, true},
		{"ipvskit has one of the endpoints", with(dests(cip, rs1, rs2)), with(dests(cip, rs1)), false},
		{"kube-proxy has only one of the endpoints", with(dests(cip, rs1)), servers, false},
		{"kube-proxy has another real server", with(dests(cip, rs1, rs2, "198.18.13.2:8080")), servers, false},
		{"kube-proxy's at another weight", with([]string{"-a " + cip + " -r " + rs1 + " -m -w 0", "-a " + cip + " -r " + rs2 + " -m -w 0"}), servers, false},
		{"an external frontend of an internal-policy case", with(dests(np, rs1, rs2)), servers, false},
		{"ipvskit's own destinations", servers, with(dests(cip, rs1, rs2)), false},
		{"a case with a local endpoint", with(dests(fmt.Sprintf("-t %s:80", allocOf("nodeport-itp-local-with-local-endpoint").clusterIP()), rs1, rs2)), servers, false},
		{"a case not in the test", with(dests(fmt.Sprintf("-t %s:80", allocOf("loadbalancer-itp-local-without-local-endpoint").clusterIP()), rs1, rs2)), servers, false},
		{"a virtual server only kube-proxy has", servers, servers[1:], false},
	} {
		d := diff(sorted(slices.Clone(c.kp)), sorted(slices.Clone(c.ik)))
		if len(d) == 0 {
			t.Fatalf("%s: no difference to judge", c.name)
		}
		bad, ok := fallbackRemoved(d, c.kp, c.ik, fb)
		if c.ok && (len(bad) > 0 || len(ok) != len(d)) {
			t.Errorf("%s: not tolerated: %q", c.name, bad)
		}
		if !c.ok && len(ok) > 0 {
			t.Errorf("%s: tolerated %q", c.name, ok)
		}
	}
}

// TestFallbackOutcome: a probe's outcomes may differ only on a fallback
// frontend, with kube-proxy answered by exactly the cluster endpoints and
// ipvskit refusing.
func TestFallbackOutcome(t *testing.T) {
	const c = "nodeport-itp-local-without-local-endpoint"
	steps, fb := mergedSteps(casesNamed(c)), fallbackFrontends(casesNamed(c))
	var cluster, nodePort probe
	for _, p := range probesOf(steps[0]) {
		if p.dst.Port() == 80 {
			cluster = p
		} else {
			nodePort = p
		}
	}
	if !cluster.dst.IsValid() || !nodePort.dst.IsValid() {
		t.Fatalf("probes of %s: want a cluster IP's and a node port's, got %v", c, probesOf(steps[0]))
	}
	for _, x := range []struct {
		p      probe
		kp, ik string
		ok     bool
	}{
		{cluster, "b1,b2 answered; source rewritten", "failed: refused", true},
		{cluster, "b1 answered; source rewritten", "failed: refused", false},
		{cluster, "b1,b2 answered; source rewritten", "failed: timeout", false},
		{cluster, "b1,b2 answered; source rewritten", "b1 answered; source rewritten", false},
		{nodePort, "b1,b2 answered; source rewritten", "failed: refused", false},
	} {
		if got := fallbackOutcome(x.p, x.kp, x.ik, fb); got != x.ok {
			t.Errorf("%s: kube-proxy %q, ipvskit %q: tolerated %v, want %v", x.p.name, x.kp, x.ik, got, x.ok)
		}
	}
}

// casesNamed is the corpus's cases of the given names.
func casesNamed(names ...string) []tcase {
	return slices.DeleteFunc(slices.Clone(corpus), func(c tcase) bool { return !slices.Contains(names, c.name) })
}
