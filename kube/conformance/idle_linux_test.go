package conformance

import (
	"strconv"
	"strings"
)

// The idle weight-0 difference (docs/kube-proxy-differences.md): when an
// endpoint leaves a TCP virtual server, kube-proxy's syncEndpoint asks its
// graceful-termination manager to delete the destination, which reads the
// destination's connection counts from the kernel and deletes it in that
// same sync if it has no active and no inactive connection; otherwise it
// sets it to weight 0 and tries again every minute, deleting it once both
// counts are 0. (UDP and SCTP destinations it deletes at once, as ipvskit
// does.) ipvskit's Sync sets every such TCP destination to weight 0, idle
// or not, and only Drain deletes it; the conformance test never calls
// Drain. So after a step that removes an idle TCP endpoint, or once
// kube-proxy's timer has deleted a drained one, ipvskit's node holds a
// destination at weight 0 that kube-proxy's no longer has.

// destKey splits a line of ipvsadm -Sn that adds a destination ("-a -t
// VS -r RS -m -w 1") into its key ("-t VS -r RS"), its weight and the rest
// of its flags without the weight ("-m"); ok is false for any other line.
func destKey(l string) (key string, weight int, rest string, ok bool) {
	f := strings.Fields(l)
	if len(f) < 5 || f[0] != "-a" || f[3] != "-r" {
		return "", 0, "", false
	}
	var others []string
	weight = -1
	for i := 5; i < len(f); i++ {
		if f[i] == "-w" && i+1 < len(f) {
			w, err := strconv.Atoi(f[i+1])
			if err != nil {
				return "", 0, "", false
			}
			weight = w
			i++
			continue
		}
		others = append(others, f[i])
	}
	if weight < 0 {
		return "", 0, "", false
	}
	return strings.Join(f[1:5], " "), weight, strings.Join(others, " "), true
}

// destinations maps the key of every destination of ipvsadm -Sn lines to
// the rest of its flags (without the weight).
func destinations(ipvs []string) map[string]string {
	out := map[string]string{}
	for _, l := range ipvs {
		if k, _, rest, ok := destKey(l); ok {
			out[k] = rest
		}
	}
	return out
}

// connections parses ipvsadm -Ln: the active plus inactive connections of
// every destination, keyed as destKey keys them ("-t VS -r RS").
func connections(list string) map[string]int {
	proto := map[string]string{"TCP": "-t", "UDP": "-u", "SCTP": "--sctp-service", "FWM": "-f"}
	out := map[string]int{}
	vs := ""
	for _, l := range strings.Split(list, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if p, ok := proto[f[0]]; ok && len(f) > 1 {
			vs = p + " " + f[1]
			continue
		}
		if f[0] != "->" || len(f) < 6 || vs == "" {
			continue
		}
		active, err1 := strconv.Atoi(f[4])
		inactive, err2 := strconv.Atoi(f[5])
		if err1 != nil || err2 != nil {
			continue // the header line
		}
		out[vs+" -r "+f[1]] = active + inactive
	}
	return out
}

// idleRemoved splits ipvs diff lines (diff(kube-proxy's, ipvskit's): "- "
// kube-proxy only, "+ " ipvskit only) into those the idle weight-0
// difference explains and the rest. A line is explained only if it is
// ipvskit's ("+ "), a TCP destination at weight 0 that kube-proxy had at an
// earlier step (had: destinations' keys to their flags, as destinations
// returns them) with the same flags, kube-proxy has it at no weight now
// (kp: its ipvsadm -Sn lines) and ipvskit's node counts no active and no
// inactive connection to it (conns, as connections returns them, read from
// ipvskit's node at the same step): kube-proxy's rule deletes exactly such a
// destination. The same traffic reached both nodes, so ipvskit's counts
// stand for kube-proxy's: a destination with connections left kube-proxy
// keeps at weight 0, and its removal would not be explained.
func idleRemoved(d, kp []string, had map[string]string, conns map[string]int) (bad, ok []string) {
	now := destinations(kp)
	for _, l := range d {
		k, w, rest, isDest := destKey(strings.TrimPrefix(l, "+ "))
		was, kpHad := had[k]
		_, kpHas := now[k]
		n, counted := conns[k]
		if strings.HasPrefix(l, "+ ") && isDest && strings.HasPrefix(k, "-t ") && w == 0 &&
			kpHad && was == rest && !kpHas && counted && n == 0 {
			ok = append(ok, l)
		} else {
			bad = append(bad, l)
		}
	}
	return bad, ok
}
