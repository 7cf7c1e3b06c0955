package proxier

import (
	"fmt"
	"strings"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/internal/linkcheck"
	"github.com/ipvskit/ipvskit/internal/names"
)

// The Config's validation: what New and Open refuse before they touch
// anything (the State's is in validate.go).

// Validate checks c and returns a *ValidationError listing every problem.
func (c *Config) Validate() error {
	v := &validator{}
	v.config(c)
	return v.err()
}

func enabledFamilies(c *Config) map[Family]bool {
	m := map[Family]bool{}
	for _, f := range c.Families {
		m[f] = true
	}
	if len(m) == 0 {
		m[IPv4] = true
	}
	return m
}

func (v *validator) config(c *Config) {
	v.configNames(c)
	if c.Backend != NFTables && c.Backend != IPTables {
		v.add("config.backend", c.Backend, "is not NFTables or IPTables")
	}
	if c.VIPMode != VIPAddresses && c.VIPMode != VIPLocalRoutes {
		v.add("config.vipMode", c.VIPMode, "is not VIPAddresses or VIPLocalRoutes")
	}
	if c.MasqueradeBit != nil && (*c.MasqueradeBit < 0 || *c.MasqueradeBit > 31) {
		v.add("config.masqueradeBit", *c.MasqueradeBit, "out of range 0-31")
	}
	v.excludeCIDRs(c.ExcludeCIDRs)
	if c.MaxDrain < 0 {
		v.add("config.maxDrain", c.MaxDrain, "is negative (0 means the default, %v)", DefaultMaxDrain)
	}
	seen := map[Family]bool{}
	for i, f := range c.Families {
		p := fmt.Sprintf("config.families[%d]", i)
		switch {
		case f != IPv4 && f != IPv6:
			v.add(p, f, "is not IPv4 or IPv6")
		case seen[f]:
			v.add(p, f, "is listed twice")
		}
		seen[f] = true
	}
	v.localDetector(&c.LocalDetector)
	v.syncDaemons(c.SyncDaemons)
}

// configNames checks the names a Config gives: its instance and VIP link,
// and kube-proxy's names and adoption.
func (v *validator) configNames(c *Config) {
	if c.Instance != "" {
		if err := names.CheckInstance(c.Instance); err != nil {
			v.add("config.instance", quote(c.Instance), "is not a valid instance name: %v", err)
		}
	}
	if c.LinkName != "" {
		if msg := badLinkName(c.LinkName); msg != "" {
			v.add("config.linkName", quote(c.LinkName), "%s", msg)
		} else if c.LinkName == names.KubeProxyLink && !c.KubeProxyNames {
			v.add("config.linkName", quote(c.LinkName), "is kube-proxy's VIP link: name it only with KubeProxyNames")
		}
	}
	if c.AdoptKubeProxy && !c.KubeProxyNames {
		v.add("config.adoptKubeProxy", true, "needs KubeProxyNames: only kube-proxy's objects can be adopted")
	}
}

// localDetector checks Config.LocalDetector: one way of telling local
// traffic, each well formed.
func (v *validator) localDetector(d *LocalDetector) {
	set := 0
	for _, b := range []bool{len(d.ClusterCIDRs) > 0, d.Interface != "", d.InterfacePrefix != ""} {
		if b {
			set++
		}
	}
	if set > 1 {
		v.add("config.localDetector", nil, "sets more than one of clusterCIDRs, interface, interfacePrefix")
	}
	cidrFam := map[Family]bool{}
	for i, p := range d.ClusterCIDRs {
		path := fmt.Sprintf("config.localDetector.clusterCIDRs[%d]", i)
		v.prefix(path, p)
		if f := inet.FamilyOf(p.Addr()); p.IsValid() && cidrFam[f] {
			v.add(path, p, "is a second %v cluster CIDR (at most one per family)", f)
		} else {
			cidrFam[f] = true
		}
	}
	if d.Interface != "" {
		if msg := badMatchName(d.Interface, 15); msg != "" {
			v.add("config.localDetector.interface", quote(d.Interface), "%s", msg)
		}
	}
	if d.InterfacePrefix != "" {
		// The rules add the wildcard: "veth" matches veth0, veth1, ...
		if msg := badMatchName(d.InterfacePrefix, 14); msg != "" {
			v.add("config.localDetector.interfacePrefix", quote(d.InterfacePrefix), "%s", msg)
		}
	}
}

// badLinkName says what is wrong with a Linux interface name, by the
// kernel's rules (dev_valid_name, as package dummy checks them), or "".
func badLinkName(n string) string {
	if reason := linkcheck.Name(n); reason != "" {
		return "is not a valid interface name: " + reason
	}
	return ""
}

// badMatchName says what is wrong with an interface name (or prefix) the
// rules match on, or "": a valid link name of at most max bytes, without
// the characters iptables and nft give a meaning to in a name (the '+'
// wildcard, '!', '*', quotes and backslashes).
func badMatchName(n string, max int) string {
	if len(n) > max {
		return fmt.Sprintf("is longer than %d bytes", max)
	}
	if msg := badLinkName(n); msg != "" {
		return msg
	}
	if i := strings.IndexAny(n, "+!*\"'\\"); i >= 0 {
		return fmt.Sprintf("contains %q, which the rules would read as a wildcard, negation or quote", n[i])
	}
	return ""
}
