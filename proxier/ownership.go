package proxier

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// ledger is what the back ends' ownership ledgers hold (the VirtualServers
// and IPVSIPs sets, read back from the kernel): the virtual servers and the
// VIPs the proxier made. The rules write a key into the ledger before the
// virtual server or VIP exists, and take it out only after it is gone, so
// the ledger holds everything the proxier owns even after a crash part way.
type ledger struct {
	servers map[ipvs.ServiceKey]bool
	vips    map[netip.Addr]bool
	// rules are the rulesets as read (only the ledger's sets), for the
	// plan: its first rules phase keeps their members until the removals
	// are done.
	rules map[Family]*iptables.Ruleset
}

// readLedger reads every enabled family's ledger. With skipForeign, a back
// end whose names are taken by another program's objects counts as having
// written nothing (Cleanup); otherwise that is an error (Sync).
func (p *Proxier) readLedger(ctx context.Context, skipForeign bool) (*ledger, error) {
	l := &ledger{servers: map[ipvs.ServiceKey]bool{}, vips: map[netip.Addr]bool{}, rules: map[Family]*iptables.Ruleset{}}
	for _, f := range []Family{IPv4, IPv6} {
		be := p.rules[f]
		if be == nil {
			continue
		}
		r, err := be.Owned(ctx)
		if skipForeign && errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, opErr(SubsystemRules, fmt.Errorf("reading the %v ownership ledger: %w", f, err))
		}
		if r == nil {
			continue
		}
		l.rules[f] = r
		for _, m := range r.Members(iptables.VirtualServers) {
			l.servers[ledgerKey(m)] = true
		}
		for _, m := range r.Members(iptables.IPVSIPs) {
			l.vips[m.Addr] = true
		}
	}
	return l, nil
}

// ledgerKey is the virtual server key of a VirtualServers member.
func ledgerKey(m iptables.Member) ipvs.ServiceKey {
	if k, ok := fwmarkLedgerKey(m); ok {
		return k
	}
	return ipvs.ServiceKey{Family: inet.FamilyOf(m.Addr), Protocol: m.Proto, Addr: m.Addr, Port: m.Port}
}

// vipOnLink reports whether an address read from the VIP link can be one of
// the proxier's VIPs: a host prefix that is not link-local. The kernel's
// fe80:: address (while someone holds the link up) and a network someone
// added are never read as VIPs, so never unbound.
func vipOnLink(p netip.Prefix) bool {
	return p.Bits() == p.Addr().BitLen() && !p.Addr().IsLinkLocalUnicast()
}
