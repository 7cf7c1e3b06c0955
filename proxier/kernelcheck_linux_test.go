package proxier

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/iptables"
)

// Foreign objects: made in the node namespace with the reference tools
// before any Proxier runs there, they must survive every sync and Cleanup
// untouched.
var (
	foreignIPVS = []string{
		"-A -t 198.18.200.1:8000 -s wrr",
		"-a -t 198.18.200.1:8000 -r 198.18.11.2:8080 -m -w 3",
	}
	foreignNFT     = "table ip foreign {\n\tset keep {\n\t\ttype ipv4_addr\n\t\telements = { 198.18.200.1 }\n\t}\n\tchain c {\n\t\tip daddr @keep counter return\n\t}\n}\n"
	foreignIPSet   = "create FOREIGN hash:ip family inet\nadd FOREIGN 198.18.200.1\n"
	foreignIPTRule = "-A FOREIGN -d 198.18.200.1/32 -j RETURN"
	// foreignRoute is another program's local route for the foreign VIP,
	// out of its own dummy link, even with our protocol number.
	foreignRoute = "local 198.18.200.1 dev foreign0 proto 173 scope host"
)

// reference is the shell script that prints every reference tool's view of
// the node, each section headed by "### <tool>". One exec for all: in the
// emulated VM each exec costs seconds.
const reference = `PATH=/usr/sbin:/sbin:/usr/bin:/bin
echo '### ipvsadm'; ipvsadm -Sn
echo '### addr'; ip -o addr show
echo '### route'; ip -o -4 route show table local; ip -o -6 route show table local
echo '### nft'; nft list ruleset
echo '### ipset'; ipset save
for t in iptables ip6tables; do for f in legacy nft; do
	echo "### $t-$f"; $t-$f-save
done; done
`

// snapshot is the reference tools' output, by section name ("ipvsadm",
// "addr", "route" (the local routes of the local table), "nft", "ipset", "iptables-legacy", "ip6tables-nft", ...).
type snapshot map[string]string

func (tp *topology) snapshot(t *testing.T) snapshot {
	t.Helper()
	out := tp.node.Exec(t, "sh", "-c", reference)
	s := snapshot{}
	for _, sec := range strings.Split(out, "### ")[1:] {
		name, body, _ := strings.Cut(sec, "\n")
		s[name] = body
	}
	return s
}

// ipvsLines are ipvsadm -Sn's lines, sorted.
func (s snapshot) ipvsLines() []string {
	var out []string
	for _, l := range strings.Split(s["ipvsadm"], "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// iptablesSave is the flavor's iptables-save (or ip6tables-save) text.
func (s snapshot) iptablesSave(v6 bool, fl iptables.Flavor) string {
	tool := "iptables"
	if v6 {
		tool = "ip6tables"
	}
	return s[fmt.Sprintf("%s-%v", tool, fl)]
}

// addForeign makes the foreign objects in the node namespace.
func (tp *topology) addForeign(t *testing.T) {
	t.Helper()
	script := "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n" +
		"ipvsadm -R <<'EOF'\n" + strings.Join(foreignIPVS, "\n") + "\nEOF\n" +
		"nft -f - <<'EOF'\n" + foreignNFT + "EOF\n" +
		"ipset restore <<'EOF'\n" + foreignIPSet + "EOF\n" +
		"iptables-restore --noflush <<'EOF'\n*nat\n:FOREIGN - [0:0]\n" + foreignIPTRule + "\nCOMMIT\nEOF\n" +
		"ip link add foreign0 type dummy\n" +
		"ip route add local 198.18.200.1 dev foreign0 table local proto 173 scope host\n"
	tp.node.Exec(t, "sh", "-c", script)
}

// checkForeign fails t unless every foreign object is in s unchanged.
// ipt is the flavor the plain iptables-restore used.
func checkForeign(t *testing.T, s snapshot) {
	t.Helper()
	lines := s.ipvsLines()
	for _, l := range foreignIPVS {
		if !slices.Contains(lines, l) {
			t.Errorf("foreign virtual server line %q gone:\n%s", l, s["ipvsadm"])
		}
	}
	for _, want := range []string{"table ip foreign", "set keep", "198.18.200.1", "ip daddr @keep counter"} {
		if !strings.Contains(s["nft"], want) {
			t.Errorf("foreign nft table lost %q:\n%s", want, s["nft"])
		}
	}
	if !strings.Contains(s["ipset"], "add FOREIGN 198.18.200.1") {
		t.Errorf("foreign ipset gone:\n%s", s["ipset"])
	}
	if !strings.Contains(s["iptables-legacy"]+s["iptables-nft"], foreignIPTRule) {
		t.Errorf("foreign iptables chain gone:\n%s%s", s["iptables-legacy"], s["iptables-nft"])
	}
	if !strings.Contains(s["route"], foreignRoute) {
		t.Errorf("foreign local route gone:\n%s", s["route"])
	}
}

// vipsOn returns the VIPs held on link in s, as "198.18.100.1/32": the
// host addresses on it (ip -o addr) in VIPAddresses, the local routes out
// of it with our protocol number (ip route show table local) in
// VIPLocalRoutes.
func (s snapshot) vipsOn(link string, mode VIPMode) []string {
	var out []string
	if mode == VIPLocalRoutes {
		for _, l := range strings.Split(s["route"], "\n") {
			f := strings.Fields(l)
			if len(f) >= 6 && f[0] == "local" && f[2] == "dev" && f[3] == link && slices.Contains(f, "proto") &&
				f[slices.Index(f, "proto")+1] == "173" {
				bits := "/32"
				if strings.Contains(f[1], ":") {
					bits = "/128"
				}
				out = append(out, f[1]+bits)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, l := range strings.Split(s["addr"], "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 && f[1] == link && (f[2] == "inet" || f[2] == "inet6") && !strings.HasPrefix(f[3], "fe80:") {
			out = append(out, f[3])
		}
	}
	slices.Sort(out)
	return out
}

// checkNothingOurs fails t if anything a Proxier makes is left in s: a
// virtual server other than the foreign one, the VIP link, the nftables
// tables, the instance's ipsets, chains and marked rules.
func checkNothingOurs(t *testing.T, s snapshot) {
	t.Helper()
	want := slices.Clone(foreignIPVS)
	slices.Sort(want)
	if got := s.ipvsLines(); !slices.Equal(got, want) {
		t.Errorf("ipvsadm -Sn after Cleanup: got\n%s\nwant only the foreign\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(s["addr"], DefaultLinkName) {
		t.Errorf("VIP link left:\n%s", s["addr"])
	}
	if strings.Contains(s["route"], " "+DefaultLinkName+" ") {
		t.Errorf("local routes out of the VIP link left:\n%s", s["route"])
	}
	if strings.Contains(s["nft"], "ipvskit") {
		t.Errorf("nftables table left:\n%s", s["nft"])
	}
	if strings.Contains(s["ipset"], " IPVSKIT-") {
		t.Errorf("ipsets left:\n%s", s["ipset"])
	}
	for _, sec := range []string{"iptables-legacy", "iptables-nft", "ip6tables-legacy", "ip6tables-nft"} {
		if strings.Contains(s[sec], "IPVSKIT-") || strings.Contains(s[sec], "ipvskit:") {
			t.Errorf("%s-save shows rules left:\n%s", sec, s[sec])
		}
	}
}

// checkContains fails t for every want that section sec of s lacks.
func checkContains(t *testing.T, s snapshot, sec string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s[sec], w) {
			t.Errorf("%s lacks %q:\n%s", sec, w, s[sec])
		}
	}
}

// checkLacks fails t for every unwanted string that section sec of s has.
func checkLacks(t *testing.T, s snapshot, sec string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(s[sec], w) {
			t.Errorf("%s has %q:\n%s", sec, w, s[sec])
		}
	}
}
