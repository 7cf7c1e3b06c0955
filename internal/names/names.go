// Package names derives the names and the ownership mark of every kernel
// object an ipvskit instance makes (VIP link, nft table, iptables chains,
// ipsets) from one instance name, and checks instance names. It is shared by
// proxier, iptables and dummy so that they agree.
package names

import (
	"fmt"
	"strings"
)

// DefaultInstance is the instance name when none is given.
const DefaultInstance = "ipvskit"

// MaxInstance is the longest instance name: the iptables prefix (the name
// upper-cased) plus the longest chain suffix must fit 28 bytes, and the IPv6
// ipset names 31.
const MaxInstance = 12

// KubeProxyPrefix is the chain and ipset prefix of kube-proxy's own names, an
// explicit opt-in (KubeProxyNames) for taking over a kube-proxy node.
const KubeProxyPrefix = "KUBE"

// KubeProxyLink and KubeProxyTable are kube-proxy's VIP link and nftables
// table (nftables mode), likewise opt-in only.
const (
	KubeProxyLink  = "kube-ipvs0"
	KubeProxyTable = "kube-proxy"
)

// reserved are instance names that would give another program's names:
// kube-proxy's prefix, Docker's, and the nftables tables of iptables-nft
// and of firewalls (kube-proxy's own table, "kube-proxy", has a hyphen
// after "kube" and is refused with "kube").
var reserved = map[string]string{
	"kube":     "kube-proxy's names are opted into with KubeProxyNames",
	"docker":   "Docker's chains start DOCKER",
	"filter":   "the name of iptables-nft's and firewalls' nftables tables",
	"nat":      "the name of iptables-nft's and firewalls' nftables tables",
	"mangle":   "the name of iptables-nft's and firewalls' nftables tables",
	"raw":      "the name of iptables-nft's and firewalls' nftables tables",
	"security": "the name of iptables-nft's and firewalls' nftables tables",
	"broute":   "the name of ebtables-nft's nftables table",
}

// CheckInstance returns why s is not a valid instance name, or nil: 1 to
// MaxInstance bytes of lower-case letters, digits and inner hyphens, starting
// with a letter.
func CheckInstance(s string) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	if len(s) > MaxInstance {
		return fmt.Errorf("longer than %d bytes", MaxInstance)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return fmt.Errorf("byte %d (%q): only a-z, 0-9 and inner '-', starting with a letter", i, c)
		}
	}
	if why, ok := reserved[s]; ok {
		return fmt.Errorf("reserved: %s", why)
	}
	// "a-6"'s IPv4 ipsets would be "A-6-*", the names of "a"'s IPv6 ones.
	if strings.HasSuffix(s, "-6") {
		return fmt.Errorf("ends with \"-6\", which would name another instance's IPv6 ipsets")
	}
	// kube-proxy's and Docker's objects start with these (KUBE-PROXY-*,
	// table kube-proxy, DOCKER-USER, ...): no instance may come near them.
	for _, p := range []string{"kube", "docker"} {
		if strings.HasPrefix(s, p) {
			return fmt.Errorf("reserved: starts with %q, %s", p, reserved[p])
		}
	}
	return nil
}

// Mark is the ownership mark of instance's objects: the VIP link's alias, the
// comment of every nft set in its table and of every iptables rule it
// writes, e.g. "ipvskit:ipvskit".
func Mark(instance string) string { return "ipvskit:" + instance }

// Link is the instance's VIP link name, e.g. "ipvskit0".
func Link(instance string, kubeProxy bool) string {
	if kubeProxy {
		return KubeProxyLink
	}
	return instance + "0"
}

// Prefix is the instance's iptables chain and ipset prefix, e.g. "IPVSKIT".
func Prefix(instance string, kubeProxy bool) string {
	if kubeProxy {
		return KubeProxyPrefix
	}
	return strings.ToUpper(instance)
}

// Table is the instance's nftables table name, e.g. "ipvskit".
func Table(instance string, kubeProxy bool) string {
	if kubeProxy {
		return KubeProxyTable
	}
	return instance
}
