package proxiertest

import "github.com/ipvskit/ipvskit/proxier"

// Wrap returns Deps that make every call of d's clients through the
// Injector. A nil client stays nil. The wrapped clients are not closed
// (nor is anything else): d's owner closes d's.
//
// A new operation of a Deps interface is one method on the wrapper of its
// client (see ipvs.go, daemons.go, link.go, sysctl.go, rules.go, conntrack.go); a new Deps field is
// one line here, and TestWrapCoversEveryDepsField fails until it is there.
func (in *Injector) Wrap(d proxier.Deps) proxier.Deps {
	out := d
	if dc, ok := d.IPVS.(proxier.DaemonClient); ok {
		out.IPVS = &daemonIPVSDep{ipvsDep: ipvsDep{in: in, next: d.IPVS}, daemons: dc}
	} else if d.IPVS != nil {
		out.IPVS = &ipvsDep{in: in, next: d.IPVS}
	}
	if rl, ok := d.Link.(routeLink); ok {
		out.Link = &routeLinkDep{linkDep: linkDep{in: in, next: d.Link}, routes: rl}
	} else if d.Link != nil {
		out.Link = &linkDep{in: in, next: d.Link}
	}
	if d.Sysctls != nil {
		out.Sysctls = &sysctlDep{in: in, next: d.Sysctls}
	}
	if d.Conntrack != nil {
		out.Conntrack = &conntrackDep{in: in, next: d.Conntrack}
	}
	if d.Rules != nil {
		out.Rules = map[proxier.Family]proxier.Rules{}
		for f, r := range d.Rules {
			if r != nil {
				out.Rules[f] = &rulesDep{in: in, fam: f, next: r}
			}
		}
	}
	return out
}

// wrapped are the Deps fields Wrap wraps.
var wrapped = []string{"IPVS", "Link", "Sysctls", "Rules", "Conntrack"}
