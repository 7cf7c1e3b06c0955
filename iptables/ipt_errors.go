package iptables

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	// "iptables-restore: line 4 failed" (legacy, at COMMIT), "Error
	// occurred at line: 4" (a parse error), "line 3: RULE_APPEND failed
	// (...)" (nft).
	failedLineRE = regexp.MustCompile(`(?:line (\d+) failed|Error occurred at line: (\d+)|line (\d+): [A-Z_]+ failed)`)
	// "Warning: Extension ipvs revision 0 not supported, missing kernel
	// module?", "Couldn't load match `set':No such file or directory".
	extensionRE = regexp.MustCompile("(?:Extension (\\S+) revision \\d+ not supported|Couldn't load (?:match|target) `([^']+)')")
)

// extModules are the kernel modules of the matches and targets the back end
// writes, by extension name.
var extModules = map[string]string{
	"set": "xt_set", "comment": "xt_comment", "addrtype": "xt_addrtype", "physdev": "xt_physdev",
	"conntrack": "xt_conntrack", "mark": "xt_mark", "MARK": "xt_mark", "MASQUERADE": "xt_MASQUERADE",
	"ipvs": "xt_ipvs", "REJECT": "ipt_REJECT", "multiport": "xt_multiport", "tcp": "xt_tcpudp", "udp": "xt_tcpudp",
}

// extModule returns the kernel module of extension ext, for family fam.
func extModule(ext string, fam Family) string {
	if ext == "REJECT" && fam == IPv6 {
		return "ip6t_REJECT"
	}
	if m, ok := extModules[ext]; ok {
		return m
	}
	return "xt_" + ext
}

// restoreError explains err, the failure of bin fed input: which line of
// input it names (with its table and text), and which kernel module is
// missing if its messages say so.
func restoreError(bin string, fam Family, input string, err error) *RestoreError {
	e := &RestoreError{Binary: bin, Err: err}
	msg := err.Error()
	if m := failedLineRE.FindStringSubmatch(msg); m != nil {
		for _, g := range m[1:] {
			if g != "" {
				e.Line, _ = strconv.Atoi(g)
				break
			}
		}
	}
	lines := strings.Split(input, "\n")
	if e.Line > 0 && e.Line <= len(lines) {
		e.Text = lines[e.Line-1]
		for i := e.Line - 1; i >= 0; i-- {
			if strings.HasPrefix(lines[i], "*") {
				e.Table = lines[i][1:]
				break
			}
		}
	} else {
		e.Line = 0
	}
	if m := extensionRE.FindStringSubmatch(msg); m != nil {
		ext := m[1]
		if ext == "" {
			ext = m[2]
		}
		e.Module = extModule(ext, fam)
	}
	return e
}
