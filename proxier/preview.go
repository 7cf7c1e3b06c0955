package proxier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"slices"
	"strings"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
)

// TakeoverPreview is what the adopting Sync (Config.AdoptKubeProxy) would
// change of what kube-proxy programmed on the node: PreviewTakeover reads
// kube-proxy's objects back and plans the Sync of a State without
// changing anything. An empty preview (no Changes) is a take-over without
// a blip: every virtual server, destination, weight and VIP stays as
// kube-proxy left it, and what the Sync rewrites (Rewrites) keeps its
// meaning.
type TakeoverPreview struct {
	// Changes are the changes, grouped by ServiceID (the State's Services
	// in ID order, then those no Service owns), each group in object order.
	Changes []TakeoverChange
	// Rewrites are what the Sync rewrites without changing what traffic
	// gets, one line each (kube-proxy's chains and sets replaced by marked
	// equivalents, its link marked), for the operator's information.
	Rewrites []string
}

// TakeoverChange is one change a take-over would make.
type TakeoverChange struct {
	// ServiceID is the State's Service the changed object serves; empty
	// for one no Service owns: kube-proxy's leftovers, which the take-over
	// deletes as kube-proxy would have, and health-check node ports in
	// kube-proxy's ipset (no virtual server names them).
	ServiceID string
	// Frontend says which of the Service's ports and addresses the object
	// serves ("ClusterIP http"); empty for a VIP or an address-only set
	// member (an address serves every port) and for objects no Service
	// owns.
	Frontend string
	// Object names the object: "virtual server tcp 10.96.0.10:80",
	// "destination 10.244.1.5:8080 of tcp 10.96.0.10:80", "VIP 10.96.0.10".
	Object string
	// Change says what happens to it: "added", "deleted", or the fields
	// that change, "weight 1 -> 0" (old -> new).
	Change string
}

// String returns the change as the preview's text shows it.
func (c TakeoverChange) String() string {
	s := c.Object
	if c.Frontend != "" {
		s += " (" + c.Frontend + ")"
	}
	return s + ": " + c.Change
}

// Empty reports whether the take-over changes nothing of what kube-proxy
// programmed (the no-blip case).
func (tp *TakeoverPreview) Empty() bool { return len(tp.Changes) == 0 }

// Services returns the IDs of the Services the take-over changes, in
// order, without the empty ID of objects no Service owns.
func (tp *TakeoverPreview) Services() []string {
	var out []string
	for _, c := range tp.Changes {
		if c.ServiceID != "" && (len(out) == 0 || out[len(out)-1] != c.ServiceID) {
			out = append(out, c.ServiceID)
		}
	}
	return out
}

// WriteTo writes the preview as text, a heading per Service:
//
//	take-over preview: 2 changes to what kube-proxy programmed
//	service default/web:
//	  destination 10.244.1.5:8080 of tcp 10.96.0.10:80 (ClusterIP http): weight 1 -> 0 (no new connections)
//	objects no Service owns (kube-proxy's leftovers, health-check ports):
//	  virtual server tcp 10.96.0.99:80: deleted (with 2 destinations)
//	rewritten, same meaning:
//	  link kube-ipvs0: marked as the Proxier's (its addresses and flags stay)
func (tp *TakeoverPreview) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	switch n := len(tp.Changes); n {
	case 0:
		b.WriteString("take-over preview: no change to what kube-proxy programmed (no blip)\n")
	case 1:
		b.WriteString("take-over preview: 1 change to what kube-proxy programmed\n")
	default:
		fmt.Fprintf(&b, "take-over preview: %d changes to what kube-proxy programmed\n", n)
	}
	for i, c := range tp.Changes {
		if i == 0 || tp.Changes[i-1].ServiceID != c.ServiceID {
			if c.ServiceID == "" {
				b.WriteString("objects no Service owns (kube-proxy's leftovers, health-check ports):\n")
			} else {
				fmt.Fprintf(&b, "service %s:\n", c.ServiceID)
			}
		}
		fmt.Fprintf(&b, "  %s\n", c)
	}
	if len(tp.Rewrites) > 0 {
		b.WriteString("rewritten, same meaning:\n")
		for _, r := range tp.Rewrites {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// String returns the preview as WriteTo writes it.
func (tp *TakeoverPreview) String() string {
	var b strings.Builder
	_, _ = tp.WriteTo(&b)
	return b.String()
}

// PreviewTakeover reads back what kube-proxy programmed and returns what
// the adopting Sync of s would change of it, changing nothing: no write to
// IPVS, the VIP link, netfilter or sysctls (kube-ipvs0 is not even marked).
// It is the dry run of that Sync: s is validated as Sync validates it (a
// *ValidationError), and a virtual server the Sync would refuse is a
// *ConflictError here too. Run it before the first Sync of a Proxier with
// Config.AdoptKubeProxy, with the State that Sync is to apply; once a Sync
// has taken the node over there is nothing of kube-proxy's to preview and
// it returns an error.
//
// kube-proxy's ipsets are compared member by member where the back end
// reads them back (the iptables back end's SetMembers; a back end without
// it, such as iptablestest's fake, leaves them out and Rewrites says so).
// Its chains are not compared rule by rule: the Sync rewrites them with
// marked equivalents, and Rewrites says so per family. The Deps.Link must
// have AdoptableAddrs (*dummy.Client does), to read kube-ipvs0's addresses
// without marking it.
func (p *Proxier) PreviewTakeover(ctx context.Context, s *State) (*TakeoverPreview, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s == nil {
		return nil, errors.New("proxier: PreviewTakeover: nil State")
	}
	if !p.kernel.adopting {
		return nil, errors.New("proxier: PreviewTakeover: nothing to take over (Config.AdoptKubeProxy is unset, or a Sync has taken the node over)")
	}
	res := &Result{}
	pv := &previewRun{s: s}
	if err := p.run(ctx, pv, res); err != nil {
		return nil, err
	}
	return pv.preview, nil
}

// previewRun is a whole State planned against what the kernel holds, read
// back without a start, and not kept (PreviewTakeover): a dry run that
// reads.
type previewRun struct {
	s       *State
	preview *TakeoverPreview
}

func (v *previewRun) validate(p *Proxier) error { return v.s.Validate(&p.cfg) }

func (v *previewRun) compute(p *Proxier) *target {
	m := compute(v.s, &p.cfg)
	return &target{want: m, whole: m, dry: true, peek: v}
}

// peeked is what peek read back.
type peeked struct {
	// have is what the kernel holds of what the Proxier would own.
	have *desired
	// oldVIPs are the VIPs held in the other VIPMode.
	oldVIPs []netip.Addr
	// sets are the members of each family's sets, where its back end
	// can read them (setReader).
	sets map[Family]*iptables.Ruleset
}

// peek reads back what the Proxier would own (kube-proxy's objects, while
// adopting) without the start a Sync makes first, and leaves what the
// Proxier knows as it was.
func (p *Proxier) peek(ctx context.Context, want *desired) (*peeked, error) {
	al, ok := p.link.(adoptableLink)
	if !ok {
		return nil, fmt.Errorf("proxier: PreviewTakeover needs a Deps.Link with AdoptableAddrs (such as *dummy.Client); %T has none", p.link)
	}
	saved, vips := p.kernel, p.vips
	defer func() { p.kernel, p.vips = saved, vips }()
	if p.kernel.applied == nil {
		p.kernel.applied = emptyDesired()
	}
	p.vips = peekVIPs{vipHolder: vips, mode: p.cfg.VIPMode, link: al}
	l, err := p.readLedger(ctx, false)
	if err != nil {
		return nil, err
	}
	have, err := p.read(ctx, want, l)
	if err != nil {
		return nil, err
	}
	if err := conflicts(want, p.kernel.foreign); err != nil {
		return nil, err
	}
	out := &peeked{have: have, oldVIPs: p.kernel.oldVIPs, sets: map[Family]*iptables.Ruleset{}}
	for f, be := range p.rules {
		if sr, ok := be.(setReader); ok {
			r, err := sr.SetMembers(ctx)
			if err != nil {
				return nil, opErr(SubsystemSets, fmt.Errorf("reading the %v sets: %w", f, err))
			}
			if r == nil {
				r = iptables.NewRuleset(f, iptables.Options{})
			}
			out.sets[f] = r
		}
	}
	return out, nil
}

// setReader reads back the members of a back end's sets, changing nothing
// (*iptables.IPTablesBackend: its ipsets, kube-proxy's while adopting).
type setReader interface {
	SetMembers(ctx context.Context) (*iptables.Ruleset, error)
}

// adoptableLink reads the addresses of a link Adopt would take, changing
// nothing (*dummy.Client and dummytest's fake have it).
type adoptableLink interface {
	AdoptableAddrs(ctx context.Context, name string) ([]netip.Prefix, error)
}

// peekVIPs reads the VIPs on a link not yet adopted: the addresses of
// kube-proxy's unmarked kube-ipvs0, and none held as routes on it (the
// link client's routes are its own, and kube-proxy makes none). A missing
// link holds no VIPs.
type peekVIPs struct {
	vipHolder
	mode VIPMode
	link adoptableLink
}

func (v peekVIPs) bound(ctx context.Context, link string) ([]netip.Addr, error) {
	return v.read(ctx, link, v.mode == VIPAddresses)
}

func (v peekVIPs) old(ctx context.Context, link string) ([]netip.Addr, error) {
	return v.read(ctx, link, v.mode != VIPAddresses)
}

func (v peekVIPs) read(ctx context.Context, link string, addrs bool) ([]netip.Addr, error) {
	var as []netip.Addr
	var err error
	if addrs {
		var ps []netip.Prefix
		ps, err = v.link.AdoptableAddrs(ctx, link)
		for _, p := range ps {
			if vipOnLink(p) {
				as = append(as, p.Addr())
			}
		}
	} else if v.mode == VIPAddresses {
		as, err = v.vipHolder.old(ctx, link)
	} else {
		as, err = v.vipHolder.bound(ctx, link)
	}
	var fe *dummy.ForeignError
	if errors.Is(err, fs.ErrNotExist) || (!addrs && errors.As(err, &fe) && fe.Alias == "") {
		return nil, nil
	}
	return as, err
}

// record makes the preview of plan, planned from what was read to want
// (with the drains overlaid, as the Sync would apply it).
func (v *previewRun) record(p *Proxier, read *peeked, want *desired, plan *Plan) {
	tp := &TakeoverPreview{}
	have := read.have
	for _, k := range unionKeys(have.servers, want.servers) {
		tp.Changes = append(tp.Changes, previewServer(k, have.servers[k], want.servers[k])...)
	}
	tp.Changes = append(tp.Changes, previewVIPs(p.cfg.VIPMode, plan, read.oldVIPs, want)...)
	owners := newSetOwners(have, want)
	for _, f := range []Family{IPv4, IPv6} {
		if r := read.sets[f]; r != nil && want.rules[f] != nil {
			tp.Changes = append(tp.Changes, previewSets(f, r, want.rules[f], owners)...)
		}
	}
	slices.SortStableFunc(tp.Changes, func(x, y TakeoverChange) int {
		// Services by ID, those no Service owns last.
		if (x.ServiceID == "") != (y.ServiceID == "") {
			if x.ServiceID == "" {
				return 1
			}
			return -1
		}
		return cmp.Compare(x.ServiceID, y.ServiceID)
	})
	for _, f := range []Family{IPv4, IPv6} {
		if plan.Rules[f] == nil && plan.RulesAfter[f] == nil {
			continue
		}
		if read.sets[f] != nil {
			tp.Rewrites = append(tp.Rewrites, fmt.Sprintf("%v: kube-proxy's chains and jump rules replaced by marked equivalents, its ipsets rewritten (member changes above), ledger ipset %s added",
				f, iptables.VirtualServers.IPSetName(f)))
		} else {
			tp.Rewrites = append(tp.Rewrites, fmt.Sprintf("%v: kube-proxy's chains, jump rules and sets replaced by marked equivalents (sets not compared)", f))
		}
	}
	tp.Rewrites = append(tp.Rewrites, fmt.Sprintf("link %s: marked as the Proxier's (its addresses and flags stay)", p.cfg.LinkName))
	v.preview = tp
}

// unionKeys are the keys of a and b, sorted.
func unionKeys(a, b map[ipvs.ServiceKey]*virtualServer) []ipvs.ServiceKey {
	keys := sortedKeys(a)
	for k := range b {
		if a[k] == nil {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareServiceKeys)
	return keys
}
