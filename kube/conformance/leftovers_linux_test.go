package conformance

import (
	"fmt"
	"regexp"

	"github.com/ipvskit/ipvskit/internal/names"
)

// leftover is IPVS state another program left on a node before any proxier
// ran there, for a case of the corpus: script (sh, run on every node of
// the comparison) makes it, exclude is the CIDR kube-proxy
// (--ipvs-exclude-cidrs) and ipvskit (Config.ExcludeCIDRs) are given.
type leftover struct {
	script  func(a alloc) string
	exclude func(a alloc) string
	// kept are the lines of ipvsadm -Sn every node must still have after
	// every step.
	kept func(a alloc) []string
}

// leftovers are the corpus's cases that start from another program's state,
// by name.
var leftovers = map[string]leftover{
	// A virtual server with a real server, on an address bound to
	// kube-ipvs0, inside the excluded CIDR: both proxiers keep it.
	// kube-ipvs0 carries ipvskit's mark, as if an earlier run of ipvskit
	// had made it (a link it did not make it would refuse; kube-proxy
	// takes any dummy link of the name).
	"excluded-virtual-server-on-the-vip-link": {
		script: func(a alloc) string {
			return fmt.Sprintf("ip link show kube-ipvs0 >/dev/null 2>&1 || { ip link add kube-ipvs0 type dummy && ip link set kube-ipvs0 alias %s; }\n"+
				"ip addr add %[2]s/32 dev kube-ipvs0\n"+
				"ipvsadm -A -t %[2]s:80 -s rr\nipvsadm -a -t %[2]s:80 -r %[3]s:8080 -m -w 1\n",
				names.Mark(names.DefaultInstance), a.excludedIP(), backendAddr(3, false))
		},
		exclude: func(a alloc) string { return a.excludedIP() + "/32" },
		kept: func(a alloc) []string {
			return []string{"-A -t " + a.excludedIP() + ":80 -s rr",
				"-a -t " + a.excludedIP() + ":80 -r " + backendAddr(3, false) + ":8080 -m -w 1"}
		},
	},
}

// excludedIP is the case's address inside the excluded CIDRs, 198.18.104.k.
func (a alloc) excludedIP() string { return fmt.Sprintf("198.18.104.%d", a.k) }

// leftoverDifference is what a leftover case differs in on purpose
// (docs/kube-proxy-differences.md): kube-proxy unbinds every address of
// kube-ipvs0 that is not one of its VIPs, those inside its excluded CIDRs
// too; ipvskit leaves them, as it leaves the virtual servers on them.
var leftoverDifference = difference{"excluded CIDRs: their addresses on the VIP link are left",
	regexp.MustCompile(`^vips \+ 198\.18\.104\.\d+/32$`)}
