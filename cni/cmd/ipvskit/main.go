// Command ipvskit is a chained CNI plugin that makes a container's network
// namespace serve service VIPs, balanced by IPVS over their backends. Install
// it in the runtime's CNI bin directory (/opt/cni/bin) and add it to a
// network configuration list after the plugin that makes the interface;
// ../../README.md has its configuration.
package main

import (
	"github.com/containernetworking/cni/pkg/skel"

	"github.com/ipvskit/ipvskit/cni"
)

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: cni.Add, Del: cni.Del, Check: cni.Check}, cni.Versions(),
		"ipvskit: serves service VIPs with IPVS inside a container's network namespace")
}
