package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
)

// The test binary is the plugin too: installed in a test's CNI_PATH under
// the plugin's name, it runs this package's main, as the built binary would;
// under the name of the fake first plugin of the chain, it prints the
// result that plugin would pass on (prevResult). A runtime finds both by
// name and runs them with the CNI's environment and stdin.
const (
	pluginName = "ipvskit"
	fakeName   = "prevresult-fake"
)

func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case pluginName:
		main()
		os.Exit(0)
	case fakeName:
		fakeFirstPlugin()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeAddress is the container's address the fake reports (the test gives
// the container's eth0 that address itself).
var fakeAddress = net.IPNet{IP: net.IPv4(198, 18, 0, 2), Mask: net.CIDRMask(24, 32)}

// fakeFirstPlugin stands for the plugin that makes the container's
// interface: its ADD prints that interface and address as a result; DEL and
// CHECK succeed.
func fakeFirstPlugin() {
	add := func(args *skel.CmdArgs) error {
		idx := 0
		res := &current.Result{
			CNIVersion: current.ImplementedSpecVersion,
			Interfaces: []*current.Interface{{Name: args.IfName, Sandbox: args.Netns}},
			IPs:        []*current.IPConfig{{Interface: &idx, Address: fakeAddress}},
		}
		return types.PrintResult(res, cniVersion(args.StdinData))
	}
	none := func(*skel.CmdArgs) error { return nil }
	skel.PluginMainFuncs(skel.CNIFuncs{Add: add, Del: none, Check: none}, version.All, "a fake first plugin")
}

func cniVersion(stdin []byte) string {
	v, err := (&version.ConfigDecoder{}).Decode(stdin)
	if err != nil || v == "" {
		return current.ImplementedSpecVersion
	}
	return v
}
