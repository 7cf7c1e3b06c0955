package proxier

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/iptables"
)

// FaultRig lends the VM topology and its checks (vmrig_linux_test.go,
// kernelcheck_linux_test.go) to the kernel fault sweep, which lives in
// package proxier_test because it imports proxiertest (which imports
// proxier).
type FaultRig struct {
	tp *topology
	// flavor is the plain iptables binary's flavor, which holds the
	// foreign chain and which FlavorAuto therefore picks.
	flavor iptables.Flavor
}

// NewFaultRig makes a topology of one client and two backends (see
// topology) with the foreign objects of addForeign in the node namespace.
func NewFaultRig(t *testing.T) *FaultRig {
	tp := newTopology(t, 1, 2)
	tp.addForeign(t)
	r := &FaultRig{tp: tp, flavor: iptables.FlavorLegacy}
	if strings.Contains(tp.node.Exec(t, "/usr/sbin/iptables", "-V"), "nf_tables") {
		r.flavor = iptables.FlavorNFT
	}
	return r
}

// Deps are fresh kernel clients in the node namespace for cfg, closed when
// t ends.
func (r *FaultRig) Deps(t *testing.T, cfg Config) Deps {
	t.Helper()
	d := r.tp.nodeDeps(t, cfg, r.flavor)
	ct, err := conntrack.New(&conntrack.Config{NetNS: r.tp.node.Handle()})
	must(t, err)
	t.Cleanup(func() { ct.Close() })
	d.Conntrack = ct
	return d
}

// Backend returns backend i's name and addresses.
func (r *FaultRig) Backend(i int) (name string, v4, v6 netip.Addr) {
	b := r.tp.backends[i]
	return b.name, b.v4, b.v6
}

// NodeAddr is the node's address on the client's link: node ports are
// served there.
func (r *FaultRig) NodeAddr() netip.Addr { return r.tp.clients[0].nodeV4 }

// Client is the client's IPv4 address.
func (r *FaultRig) Client() netip.Addr { return r.tp.clients[0].v4 }

// BackendPorts are the TCP and UDP ports every backend serves.
const BackendTCPPort, BackendUDPPort = backendTCPPort, backendUDPPort

// Snapshot is the reference tools' view of the node namespace, by
// section: "ipvsadm" (-Sn), "addr" (ip -o addr show), "route" (ip -o route
// show table local: IPv4, as the sweep is), and what shows the
// state of back end be, or of both if full: "nft" (nft list ruleset), or
// "ipset" (save) and "iptables-<flavor>" (iptables-save of the flavor that
// holds the foreign chain, which FlavorAuto picks). One exec per tool and
// no shell: in the emulated VM each exec costs a second or more.
func (r *FaultRig) Snapshot(t *testing.T, be Backend, full bool) map[string]string {
	t.Helper()
	s := map[string]string{
		"ipvsadm": testutil.IPVSAdmSave(t, r.tp.node),
		"addr":    r.tp.node.Exec(t, "/usr/sbin/ip", "-o", "addr", "show"),
		"route":   r.tp.node.Exec(t, "/usr/sbin/ip", "-o", "route", "show", "table", "local"),
	}
	if be == NFTables || full {
		s["nft"] = r.tp.node.Exec(t, "/usr/sbin/nft", "list", "ruleset")
	}
	if be == IPTables || full {
		s["ipset"] = r.tp.node.Exec(t, "/usr/sbin/ipset", "save")
		s["iptables-"+r.flavor.String()] = r.tp.node.Exec(t, "/usr/sbin/iptables-"+r.flavor.String()+"-save")
	}
	return s
}

// CheckForeign fails t unless the foreign objects (see addForeign) that
// the sections of s show are there unchanged.
func (r *FaultRig) CheckForeign(t *testing.T, s map[string]string) {
	t.Helper()
	// Sections s lacks get the foreign object itself, so that only what
	// s shows is checked.
	full := snapshot{"nft": foreignNFT, "ipset": foreignIPSet, "iptables-" + r.flavor.String(): foreignIPTRule, "route": foreignRoute}
	for sec, text := range s {
		full[sec] = text
	}
	checkForeign(t, full)
}

// CheckNothingOurs fails t if anything a Proxier makes is left in s.
func (r *FaultRig) CheckNothingOurs(t *testing.T, s map[string]string) {
	t.Helper()
	checkNothingOurs(t, s)
}

// TCP makes one connection from the client to addr and returns the name of
// the backend that answered.
func (r *FaultRig) TCP(t *testing.T, addr netip.AddrPort) (string, error) {
	rep, err := r.tp.clients[0].tcpOnce(t, addr, 10*time.Second)
	if err != nil {
		return "", fmt.Errorf("TCP to %v: %w", addr, err)
	}
	return rep.name, nil
}
