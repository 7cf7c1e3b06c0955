// Package cni is ipvskit's CNI plugin: it makes a container's network
// namespace serve a set of service VIPs, balanced by IPVS over their
// backends, as Docker Swarm does per sandbox. It is a chained plugin: it runs
// after the plugin that made the container's interface, passes that
// plugin's result on, and owns only what its Proxier makes in the namespace
// (a VIP link, virtual servers, one nftables table or a few iptables chains
// and ipsets).
//
// The program is cmd/ipvskit, built on Add, Del and Check here:
//
//	func main() {
//		skel.PluginMainFuncs(skel.CNIFuncs{Add: cni.Add, Del: cni.Del, Check: cni.Check},
//			cni.Versions(), "ipvskit: serves service VIPs inside a container's network namespace")
//	}
//
// Parse reads the plugin's stanza of the network configuration; NetConf's
// State and ProxierConfig map it onto the proxier's words. A malformed
// stanza is a *types.Error (code types.ErrDecodingFailure or
// types.ErrInvalidNetworkConfig) naming each bad field and value, which the
// skel prints on stdout as the CNI spec asks. README.md has the reference.
package cni
