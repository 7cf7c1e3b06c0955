package proxier

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// The caller's marking rule of TestIntegrationFWMark, as docs/packet-flow.md
// gives it: packets to the VIP at ports 80 and 443 get mark 7, in the
// mangle hooks, before the Proxier's nat rules and IPVS see them.
const (
	callerMarkIPT = "iptables -t mangle -A PREROUTING -d 198.18.100.1/32 -p tcp -m multiport --dports 80,443 -j MARK --set-mark 7\n" +
		"iptables -t mangle -A OUTPUT -d 198.18.100.1/32 -p tcp -m multiport --dports 80,443 -j MARK --set-mark 7\n" +
		"ip6tables -t mangle -A PREROUTING -d 2001:db8:100::1/128 -p tcp -m multiport --dports 80,443 -j MARK --set-mark 7\n" +
		"ip6tables -t mangle -A OUTPUT -d 2001:db8:100::1/128 -p tcp -m multiport --dports 80,443 -j MARK --set-mark 7\n"
	callerMarkNFT = "nft -f - <<'EOF'\ntable ip caller {\n" +
		"\tchain pre { type filter hook prerouting priority mangle; ip daddr 198.18.100.1 tcp dport { 80, 443 } meta mark set 7; }\n" +
		"\tchain out { type route hook output priority mangle; ip daddr 198.18.100.1 tcp dport { 80, 443 } meta mark set 7; }\n}\n" +
		"table ip6 caller {\n" +
		"\tchain pre { type filter hook prerouting priority mangle; ip6 daddr 2001:db8:100::1 tcp dport { 80, 443 } meta mark set 7; }\n" +
		"\tchain out { type route hook output priority mangle; ip6 daddr 2001:db8:100::1 tcp dport { 80, 443 } meta mark set 7; }\n}\nEOF\n"
)

// Another program's firewall-mark service, mark 8, with its own mangle
// chain and nft table marking its own VIP: all untouched.
const theirFWMark = "ipvsadm -A -f 8 -s wrr\nipvsadm -a -f 8 -r 198.18.11.2 -m -w 2\n" +
	"iptables -t mangle -N THEIR-MARKS\niptables -t mangle -A THEIR-MARKS -d 198.18.200.3/32 -j MARK --set-mark 8\n" +
	"nft -f - <<'EOF'\ntable ip theirmarks {\n\tchain pre { type filter hook prerouting priority mangle; ip daddr 198.18.200.3 meta mark set 8; }\n}\nEOF\n"

// TestIntegrationFWMark serves the http+https case with real traffic in the
// VM, under each netfilter back end: a firewall-mark service (mark 7) on a
// VIP of each family at ports 80 and 443 with session affinity, the caller's marking rule
// written with that back end's tool. A client that connected on 80 lands
// on the same backend on 443; two clients land on different backends; the
// backends see the clients' own addresses (no masquerade, which would change
// the mark). A restarted Proxier knows the service as its own (its ledger
// key in the real ipset or nft set), Reconcile finds nothing, Cleanup
// removes it; another program's fwmark service, mangle chain and nft table,
// and the usual foreign objects, stay untouched.
func TestIntegrationFWMark(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) { testFWMark(t, v) })
	}
}

func testFWMark(t *testing.T, v variant) {
	ctx := context.Background()
	tp := newTopologyIn(t, v, 2, 3)
	for _, b := range tp.backends {
		serveTCPOn(t, b, 80)
		serveTCPOn(t, b, 443)
	}
	tp.addForeign(t)
	mark := callerMarkNFT
	if v.be == IPTables {
		mark = callerMarkIPT
	}
	tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+theirFWMark+mark)
	theirs := fwmarkTheirs(t, tp)

	cfg := Config{Backend: v.be, Families: []Family{IPv4, IPv6}}
	k := tp.newProxier(t, cfg)
	st := State{Services: map[string]Service{"web": {
		ClusterIPs:      []netip.Addr{a("198.18.100.1"), a("2001:db8:100::1")},
		Ports:           []Port{{Name: "http", Protocol: TCP, Port: 80}, {Name: "https", Protocol: TCP, Port: 443}},
		FirewallMark:    7,
		SessionAffinity: &SessionAffinity{Timeout: time.Minute},
		Endpoints:       tp.endpoints(true, true, []int{0, 1, 2}),
	}}}
	k.sync(t, st)
	lines := tp.snapshot(t).ipvsLines()
	for _, l := range []string{"-A -f 7 -s rr -p 60", "-A -f 7 -6 -s rr -p 60", "-a -f 7 -r 198.18.11.2:0 -m -w 1", "-a -f 7 -r 198.18.12.2:0 -m -w 1", "-a -f 7 -r 198.18.13.2:0 -m -w 1"} {
		if !slices.Contains(lines, l) {
			t.Errorf("ipvsadm -Sn lacks %q:\n%s", l, strings.Join(lines, "\n"))
		}
	}

	http, https := ap("198.18.100.1:80"), ap("198.18.100.1:443")
	landed := map[string]bool{}
	var chosen []string
	for _, c := range tp.clients {
		first := c.tcp(t, http, 1)
		rs := slices.Concat(first, c.tcp(t, https, 3), c.tcp(t, http, 2))
		wantCounts(t, c.name+" on 80 then 443", rs, map[string]int{first[0].name: len(rs)})
		wantPeers(t, c.name+" on 80 then 443", rs, c.v4)
		landed[first[0].name] = true
		chosen = append(chosen, first[0].name)
	}
	// IPv6, under the same mark in its own virtual server.
	c := tp.clients[0]
	first := c.tcp(t, ap("[2001:db8:100::1]:80"), 1)
	rs := slices.Concat(first, c.tcp(t, ap("[2001:db8:100::1]:443"), 2))
	wantCounts(t, c.name+" on [::]:80 then 443", rs, map[string]int{first[0].name: len(rs)})
	wantPeers(t, c.name+" on [::]:80 then 443", rs, c.v6)
	if len(landed) != 2 {
		t.Errorf("both clients landed on %v: the scheduler should have spread them", landed)
	}

	// A restarted Proxier: the ledger says the mark is its own.
	k2 := tp.newProxier(t, cfg)
	res := k2.sync(t, st)
	if n := res.Plan.IPVSAdd.Len() + res.Plan.IPVSDelete.Len(); n != 0 {
		t.Errorf("a restarted Proxier sent %d IPVS requests:\n%v", n, res.Plan)
	}
	rep, err := k2.p.Reconcile(ctx)
	if err != nil || len(rep.Drift) != 0 {
		t.Errorf("reconcile: %v\n%v", err, rep)
	}
	// The virtual server was not touched: client-1 keeps its backend.
	wantCounts(t, "client-1 after the restart", tp.clients[0].tcp(t, https, 2), map[string]int{chosen[0]: 2})
	must(t, k2.p.Cleanup(ctx))
	s := tp.snapshot(t)
	checkForeign(t, s)
	for _, l := range s.ipvsLines() {
		if strings.Contains(l, "-f 7") {
			t.Errorf("Cleanup left %q", l)
		}
	}
	if got := fwmarkTheirs(t, tp); got != theirs {
		t.Errorf("another program's marks changed:\n%s\nwant:\n%s", got, theirs)
	}
}

// fwmarkTheirs is what the other program owns of marks: its fwmark
// virtual server and its mangle rules and nft table, as the tools print
// them.
func fwmarkTheirs(t *testing.T, tp *topology) string {
	t.Helper()
	return tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nipvsadm -Sn | grep -- '-f 8'\n"+
		"iptables -t mangle -S THEIR-MARKS\nnft list table ip theirmarks")
}
