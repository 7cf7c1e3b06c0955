package proxier

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/conntrack"
)

// driftCase is one tampering of the node with the reference tools: the
// shell commands (one exec), what the traffic shows before the repair, and
// the report Reconcile must give, as Drift.String() forms (a want ending in
// "..." matches a report line by its start).
type driftCase struct {
	name   string
	cmd    string
	broken func(t *testing.T)
	want   []string
	// tools are the reference tools (driftTools) that show the repair.
	tools []string
	// repaired, if set, checks more once the repair is done.
	repaired func(t *testing.T, rep *ReconcileReport)
}

// TestIntegrationReconcile tampers, in the VM, with everything a Proxier
// applied, with the tools an operator would use (ipvsadm, ip, sysctl,
// nft, iptables, ipset), once per netfilter back end: for each case the
// traffic breaks as the tampering implies, Reconcile reports exactly that
// drift and repairs it, the traffic works again, a second Reconcile finds
// nothing, the reference tools show what they showed after the sync, and
// the foreign objects (a virtual server made with ipvsadm, an nft table, an
// ipset, an iptables chain) are untouched. The Proxier cleans up conntrack:
// a UDP socket that sent while its virtual server was gone is answered
// once Reconcile re-creates it.
func TestIntegrationReconcile(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) { testReconcile(t, v) })
	}
}

func testReconcile(t *testing.T, v variant) {
	be := v.be
	tp := newTopologyIn(t, v, 1, 2)
	tp.addForeign(t)
	// Masquerade-all: the backends see the node's address, so a lost
	// masquerade rule shows in the traffic.
	k := tp.newProxier(t, Config{Backend: be, MasqueradeAll: true})
	ct, err := conntrack.New(&conntrack.Config{NetNS: tp.node.Handle()})
	must(t, err)
	t.Cleanup(func() { ct.Close() })
	k.p.ct = ct // as Deps.Conntrack does; newProxier is shared with tests without it
	c1, b1, b2 := tp.clients[0], tp.backends[0], tp.backends[1]
	k.sync(t, State{Services: map[string]Service{
		"web": {
			ClusterIPs: []netip.Addr{a("198.18.100.1")},
			Ports:      []Port{portHTTP},
			Endpoints:  tp.endpoints(true, false, []int{0, 1}),
		},
		"api": {
			ClusterIPs: []netip.Addr{a("198.18.100.2")},
			Ports:      []Port{portHTTP},
			Endpoints:  tp.endpoints(true, false, []int{1}),
		},
		"dns": tp.udpService("198.18.100.3", 0, 0),
	}})
	web, api, dns := ap("198.18.100.1:80"), ap("198.18.100.2:80"), ap("198.18.100.3:53")
	each := func(n int, hs ...*host) map[string]int {
		m := map[string]int{}
		for _, h := range hs {
			m[h.name] = n
		}
		return m
	}
	works := func(t *testing.T) {
		t.Helper()
		// Both backends and only they, not exactly two each: a client
		// port the broken phase used may still have an IPVS connection
		// entry, which sends a new connection on it to its old backend.
		rs := c1.tcp(t, web, 6)
		if got := count(rs); len(got) != 2 || got[b1.name] == 0 || got[b2.name] == 0 {
			t.Errorf("TCP to web: answers %v, want both %s and %s (%v)", got, b1.name, b2.name, rs)
		}
		wantPeers(t, "TCP to web", rs, b1.nodeV4, b2.nodeV4)
		wantCounts(t, "TCP to api", c1.tcp(t, api, 1), each(1, b2))
		wantCounts(t, "UDP to dns", c1.udp(t, dns, 1), each(1, b1))
	}
	refused := func(t *testing.T) {
		t.Helper()
		if r, err := c1.tcpOnce(t, web, 3*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("a connection to web: %v, %v; want it refused", r, err)
		}
	}
	unreachable := func(t *testing.T) {
		t.Helper()
		if r, err := c1.tcpOnce(t, web, 3*time.Second); err == nil {
			t.Fatalf("a connection to web without its VIP was answered: %v", r)
		}
	}
	onlyFrom := func(h *host) func(t *testing.T) {
		return func(t *testing.T) {
			t.Helper()
			wantCounts(t, "TCP to web", c1.tcp(t, web, 4), each(4, h))
		}
	}
	unmasqueraded := func(t *testing.T) {
		t.Helper()
		wantPeers(t, "TCP to web without masquerade", c1.tcp(t, web, 2), c1.v4)
	}
	works(t)
	iptSave := "iptables-" + k.flavor.String() + "-save"
	rulesTools := []string{"nft"}
	if be == IPTables {
		rulesTools = []string{"ipset", iptSave}
	}
	// How the VIPs are held, and how a neighbour takes one away.
	vipTool, vipObj, vipDel := "addr", "address", "ip addr del 198.18.100.1/32 dev ipvskit0"
	if v.mode == VIPLocalRoutes {
		vipTool, vipObj, vipDel = "route", "route local", "ip route del local 198.18.100.1 dev ipvskit0 table local proto 173"
	}
	all := append([]string{"ipvsadm", vipTool, "sysctl"}, rulesTools...)
	clean := normalizeSnapshot(tp.driftSnapshot(t, all...))
	for _, tool := range all {
		if clean[tool] == "" {
			t.Fatalf("%s shows nothing after the sync", tool)
		}
	}
	ipvsTools, vipTools := []string{"ipvsadm"}, []string{vipTool, "ipvsadm"}
	cases := []driftCase{
		{"ipvsadm -d", "ipvsadm -d -t 198.18.100.1:80 -r 198.18.11.2:8080", onlyFrom(b2),
			[]string{"ipvs: destination tcp 198.18.100.1:80 -> 198.18.11.2:8080: missing"}, ipvsTools, nil},
		{"ipvsadm -e weight", "ipvsadm -e -t 198.18.100.1:80 -r 198.18.12.2:8080 -m -w 0", onlyFrom(b1),
			[]string{"ipvs: destination tcp 198.18.100.1:80 -> 198.18.12.2:8080: weight 0, want 1"}, ipvsTools, nil},
		{"ipvsadm -E", "ipvsadm -E -t 198.18.100.1:80 -s wrr -p 600", func(t *testing.T) {
			if got := count(c1.tcp(t, web, 4)); len(got) != 1 {
				t.Fatalf("with persistence one client reached %v, want one backend", got)
			}
		}, []string{"ipvs: virtual server tcp 198.18.100.1:80: scheduler wrr, want rr; persistence 10m0s, want 0s"}, ipvsTools, nil},
		{"ipvsadm -D", "ipvsadm -D -t 198.18.100.1:80", refused,
			[]string{"ipvs: virtual server tcp 198.18.100.1:80: missing"}, ipvsTools, nil},
		{strings.Join(strings.Fields(vipDel)[:3], " "), vipDel, unreachable,
			[]string{"addresses: " + vipObj + " 198.18.100.1 on ipvskit0: missing"}, vipTools, nil},
		{"ip link del", "ip link del ipvskit0", unreachable, []string{
			"addresses: link ipvskit0: missing",
			"addresses: " + vipObj + " 198.18.100.1 on ipvskit0: missing",
			"addresses: " + vipObj + " 198.18.100.2 on ipvskit0: missing",
			"addresses: " + vipObj + " 198.18.100.3 on ipvskit0: missing",
		}, vipTools, nil},
		{"sysctl", "sysctl -qw net.ipv4.vs.conntrack=0\necho 0 > /proc/sys/net/ipv4/vs/expire_nodest_conn", unmasqueraded, []string{
			`sysctl: net/ipv4/vs/conntrack: "0", want "1"`,
			`sysctl: net/ipv4/vs/expire_nodest_conn: "0", want "1"`,
		}, []string{"sysctl"}, nil},
	}
	var stuck net.Conn
	cases = append(cases, driftCase{"ipvsadm -D udp", "ipvsadm -D -u 198.18.100.3:53", func(t *testing.T) {
		// Sent to a VIP without its virtual server: the node answers
		// port unreachable, and the flow's conntrack entry has no NAT.
		stuck = c1.dialUDP(t, dns)
		unanswered(t, "UDP to dns without its virtual server", stuck, 2)
	}, []string{"ipvs: virtual server udp 198.18.100.3:53: missing"}, ipvsTools, func(t *testing.T, rep *ReconcileReport) {
		if rep.ConntrackDeleted == 0 {
			t.Errorf("Reconcile deleted no conntrack entry")
		}
		askUntil(t, "the socket that sent while dns was gone", stuck, b1)
	}})
	switch be {
	case NFTables:
		cases = append(cases,
			driftCase{"nft flush set", "nft flush set ip ipvskit cluster-ip", refused, []string{
				"sets IPv4: set ip ipvskit cluster-ip: 3 members missing (198.18.100.1 . tcp . 80; 198.18.100.2 . tcp . 80; 198.18.100.3 . udp . 53)",
			}, rulesTools, nil},
			driftCase{"nft flush chain", "nft flush chain ip ipvskit masquerading", unmasqueraded, []string{
				"rules IPv4: chain ip ipvskit masquerading: 4 rules missing (ip daddr . meta l4proto . th dport . ip saddr @loop-back masquerade...",
			}, rulesTools, nil},
			driftCase{"nft delete table", "nft delete table ip ipvskit", unmasqueraded, []string{
				"rules IPv4: table ip ipvskit: missing",
			}, rulesTools, nil},
		)
	case IPTables:
		ipt := "iptables-" + k.flavor.String()
		cases = append(cases,
			driftCase{"ipset flush", "ipset flush IPVSKIT-CLUSTER-IP", refused, []string{
				"sets IPv4: set IPVSKIT-CLUSTER-IP: 3 members missing (198.18.100.1,tcp:80; 198.18.100.2,tcp:80; 198.18.100.3,udp:53)",
			}, rulesTools, nil},
			driftCase{"iptables -F", ipt + " -t nat -F IPVSKIT-POSTROUTING", unmasqueraded, []string{
				"rules IPv4: chain nat IPVSKIT-POSTROUTING: ...",
			}, rulesTools, nil},
			driftCase{"iptables -D jump", ipt + ` -t nat -D PREROUTING -m comment --comment "ipvskit:ipvskit" -j IPVSKIT-SERVICES`, unmasqueraded, []string{
				"rules IPv4: jump nat PREROUTING -> IPVSKIT-SERVICES: missing",
			}, rulesTools, nil},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+c.cmd)
			if c.broken != nil {
				c.broken(t)
			}
			rep, err := k.p.Reconcile(context.Background())
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			wantLines(t, rep, c.want)
			works(t)
			if c.repaired != nil {
				c.repaired(t, rep)
			}
			if rep, err := k.p.Reconcile(context.Background()); err != nil || len(rep.Drift) != 0 {
				t.Fatalf("the second Reconcile: %v\n%v", err, rep)
			}
			k.checkForeignServer(t)
			// The reference tools show what they showed after the sync,
			// foreign objects included.
			got := normalizeSnapshot(tp.driftSnapshot(t, c.tools...))
			for _, tool := range c.tools {
				if got[tool] != clean[tool] {
					t.Errorf("%s after the repair differs from after the sync:\nafter the sync:\n%s\nafter the repair:\n%s", tool, clean[tool], got[tool])
				}
			}
		})
	}
	k.cleanup(t, tp)
}

// wantLines fails t unless rep's lines are want, where a want ending in
// "..." matches a line by its start.
func wantLines(t *testing.T, rep *ReconcileReport, want []string) {
	t.Helper()
	ok := len(rep.Drift) == len(want)
	for i := 0; ok && i < len(want); i++ {
		got := rep.Drift[i].String()
		if w, prefix := strings.CutSuffix(want[i], "..."); prefix {
			ok = strings.HasPrefix(got, w)
		} else {
			ok = got == w
		}
	}
	if !ok {
		t.Fatalf("reconcile report:\n%s\nwant:\n%s", rep, strings.Join(want, "\n"))
	}
}

// driftTools are the commands that show each tool's view of the node.
var driftTools = map[string]string{
	"ipvsadm":              "ipvsadm -Sn",
	"addr":                 "ip -o addr show",
	"route":                "ip -o -4 route show table local; ip -o -6 route show table local",
	"sysctl":               "sysctl net.ipv4.vs net.ipv4.ip_forward net.ipv4.conf.all.route_localnet",
	"nft":                  "nft list ruleset",
	"ipset":                "ipset save",
	"iptables-nft-save":    "iptables-nft-save",
	"iptables-legacy-save": "iptables-legacy-save",
}

// driftSnapshot runs the tools in one exec (in the emulated VM each exec
// costs seconds) and returns their output by name.
func (tp *topology) driftSnapshot(t *testing.T, tools ...string) snapshot {
	t.Helper()
	script := "PATH=/usr/sbin:/sbin:/usr/bin:/bin\n"
	for _, tool := range tools {
		script += "echo '### " + tool + "'; " + driftTools[tool] + " 2>&1\n"
	}
	out := tp.node.Exec(t, "sh", "-c", script)
	s := snapshot{}
	for _, sec := range strings.Split(out, "### ")[1:] {
		name, body, _ := strings.Cut(sec, "\n")
		s[name] = body
	}
	return s
}

var (
	nftElements = regexp.MustCompile(`(?s)elements = \{([^}]*)\}`)
	ifIndex     = regexp.MustCompile(`(?m)^\d+: `)
	ipsetInit   = regexp.MustCompile(` initval 0x[0-9a-f]+`)
	counters    = regexp.MustCompile(` \[\d+:\d+\]`)
)

// normalizeSnapshot takes out of s what a correct repair may change: the
// order of nft's tables, set elements and ipset entries, a re-created
// link's index, the random initval of a re-created ipset, counters.
func normalizeSnapshot(s snapshot) map[string]string {
	sorted := func(text string) string {
		var ls []string
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				ls = append(ls, l)
			}
		}
		slices.Sort(ls)
		return strings.Join(ls, "\n")
	}
	out := map[string]string{}
	for name, body := range s {
		switch {
		case name == "nft":
			body = nftElements.ReplaceAllStringFunc(body, func(m string) string {
				var els []string
				for _, e := range strings.Split(nftElements.FindStringSubmatch(m)[1], ",") {
					els = append(els, strings.TrimSpace(e))
				}
				slices.Sort(els)
				return "elements = { " + strings.Join(els, ", ") + " }"
			})
			body = sorted(body)
		case name == "addr":
			body = sorted(ifIndex.ReplaceAllString(body, ""))
		case name == "ipset":
			body = sorted(ipsetInit.ReplaceAllString(body, ""))
		case strings.HasSuffix(name, "-save"):
			var ls []string
			for _, l := range strings.Split(counters.ReplaceAllString(body, ""), "\n") {
				if !strings.HasPrefix(l, "#") {
					ls = append(ls, l)
				}
			}
			body = strings.Join(ls, "\n")
		default:
			body = sorted(body)
		}
		out[name] = body
	}
	return out
}
