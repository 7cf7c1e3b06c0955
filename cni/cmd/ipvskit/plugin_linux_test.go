package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

const (
	vip       = "198.18.100.1"
	ctrAddr   = "198.18.0.2/24"
	neighbour = "198.18.200.1:80" // another program's virtual server in the container
)

// backends are the backend namespace's two addresses; each answers with
// its own address.
var backends = []string{"198.18.0.1", "198.18.0.3"}

func conflist(backend string) string {
	return `{"cniVersion": "1.0.0", "name": "sandbox-lb", "plugins": [
	{"type": "` + fakeName + `"},
	{"type": "` + pluginName + `", "backend": "` + backend + `", "services": [
		{"name": "web", "vip": "` + vip + `", "port": 80, "targetPort": 8080, "backends": ["` + strings.Join(backends, `", "`) + `"]}
	]}]}`
}

// TestIntegrationCNIPlugin runs the plugin as a runtime does (libcni, a
// conflist whose first plugin passes on its result) against a container
// namespace joined to a backend namespace by a veth pair, with both back
// ends: VERSION, ADD twice with traffic to the VIP, CHECK passing and then
// failing once someone deleted the virtual server, a malformed stanza
// refused with its CNI error code on stdout, DEL twice, DEL of a namespace
// that is gone, and another program's virtual server and nft table in the
// container namespace untouched throughout.
func TestIntegrationCNIPlugin(t *testing.T) {
	for _, backend := range []string{"nftables", "iptables"} {
		t.Run(backend, func(t *testing.T) { testPlugin(t, backend) })
	}
}

func testPlugin(t *testing.T, backend string) {
	ctr := testutil.NewNetNS(t)
	testutil.RequireIPVS(t, ctr)
	be := testutil.NewNetNS(t)
	testutil.Veth(t, ctr, "eth0", netip.MustParsePrefix(ctrAddr), be, "b0", netip.MustParsePrefix(backends[0]+"/24"))
	be.Exec(t, "ip", "addr", "add", backends[1]+"/24", "dev", "b0", "nodad")
	serveAddresses(t, be)
	foreign := addNeighbour(t, ctr)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cc, bin := newRuntime(t)
	list, err := libcni.ConfListFromBytes([]byte(conflist(backend)))
	if err != nil {
		t.Fatal(err)
	}
	rt := &libcni.RuntimeConf{ContainerID: "ctr-" + backend, NetNS: ctr.Path(), IfName: "eth0"}

	vi, err := cc.GetVersionInfo(ctx, pluginName)
	if err != nil || !slices.Contains(vi.SupportedVersions(), "1.1.0") {
		t.Fatalf("VERSION: %v, %v; want 1.1.0 among them", vi, err)
	}

	var saved string
	for i := range 2 {
		res, err := cc.AddNetworkList(ctx, list, rt)
		if err != nil {
			t.Fatalf("ADD #%d: %v", i+1, err)
		}
		r, err := current.GetResult(res)
		if err != nil || len(r.IPs) != 1 || r.IPs[0].Address.String() != ctrAddr {
			t.Fatalf("ADD #%d: result %v (%v), want the first plugin's, passed on", i+1, res, err)
		}
		answered := dialVIP(t, ctr, 6)
		for _, b := range backends {
			if !slices.Contains(answered, b) {
				t.Errorf("ADD #%d: backends that answered %v lack %s", i+1, answered, b)
			}
		}
		if s := ours(testutil.IPVSAdmSave(t, ctr)); i == 0 {
			saved = s
		} else if s != saved {
			t.Errorf("the second ADD changed IPVS:\n%s\nwas:\n%s", s, saved)
		}
	}

	if err := cc.CheckNetworkList(ctx, list, rt); err != nil {
		t.Fatalf("CHECK after ADD: %v", err)
	}
	ctr.Exec(t, "ipvsadm", "-D", "-t", vip+":80")
	err = cc.CheckNetworkList(ctx, list, rt)
	var ce *types.Error
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, vip+":80") {
		t.Fatalf("CHECK after ipvsadm -D: %v; want a CNI error naming %s:80", err, vip)
	}
	t.Logf("CHECK after ipvsadm -D: code %d: %s", ce.Code, ce.Msg)
	if err := cc.CheckNetworkList(ctx, list, rt); err != nil {
		t.Errorf("CHECK after the CHECK that repaired: %v", err)
	}

	refuseMalformed(t, bin, ctr)

	for i := range 2 {
		if err := cc.DelNetworkList(ctx, list, rt); err != nil {
			t.Fatalf("DEL #%d: %v", i+1, err)
		}
		if s := ours(testutil.IPVSAdmSave(t, ctr)); s != "" {
			t.Errorf("after DEL #%d, IPVS still holds:\n%s", i+1, s)
		}
		if out, err := ctr.TryExec(t, nil, "ip", "link", "show", "ipvskit0"); err == nil {
			t.Errorf("after DEL #%d the VIP link is left: %s", i+1, out)
		}
	}
	if tables := ctr.Exec(t, "nft", "list", "tables"); strings.Contains(tables, " ipvskit") {
		t.Errorf("after DEL the nft table is left:\n%s", tables)
	}
	if got := neighbourState(t, ctr); got != foreign {
		t.Errorf("another program's objects changed:\n%s\nwere:\n%s", got, foreign)
	}

	gone := &libcni.RuntimeConf{ContainerID: "gone-" + backend, NetNS: filepath.Join(t.TempDir(), "no-such-netns"), IfName: "eth0"}
	if err := cc.DelNetworkList(ctx, list, gone); err != nil {
		t.Errorf("DEL of a namespace that is gone: %v", err)
	}
}

// EnvPlugin names the environment variable that gives the plugin binary
// to test, built with go build (scripts/test builds it on the host, whose
// files the VM rig's guest sees read-only). Without it, this test binary
// stands in: under the plugin's name it runs the same main.
const EnvPlugin = "IPVSKIT_CNI_PLUGIN"

// newRuntime installs the plugin and the fake first plugin in a CNI_PATH
// of the test's own, and returns a runtime (libcni) using it and the
// plugin's path.
func newRuntime(t *testing.T) (*libcni.CNIConfig, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	plugin := self
	if p := os.Getenv(EnvPlugin); p != "" {
		if plugin, err = filepath.Abs(p); err != nil {
			t.Fatal(err)
		}
		t.Logf("the plugin: %s (%s)", plugin, EnvPlugin)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{pluginName: plugin, fakeName: self} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return libcni.NewCNIConfigWithCacheDir([]string{bin}, filepath.Join(dir, "cache"), nil), filepath.Join(bin, pluginName)
}

// serveAddresses answers every TCP connection to port 8080 in ns with the
// address it reached.
func serveAddresses(t *testing.T, ns *testutil.NetNS) {
	t.Helper()
	ns.Serve(t, "tcp", ":8080", func(c net.Conn) {
		fmt.Fprintln(c, c.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap())
	})
}

// dialVIP connects to the VIP n times from inside ns and returns who
// answered each time. The first connection is retried until a deadline.
func dialVIP(t *testing.T, ns *testutil.NetNS, n int) []string {
	t.Helper()
	var out []string
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n {
		var (
			line string
			err  error
		)
		ns.Do(t, func() {
			var c net.Conn
			if c, err = net.DialTimeout("tcp", vip+":80", 5*time.Second); err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			line, err = bufio.NewReader(c).ReadString('\n')
		})
		if err != nil {
			if len(out) == 0 && time.Now().Before(deadline) {
				continue
			}
			t.Fatalf("connection %d to %s:80 from the container: %v", len(out)+1, vip, err)
		}
		out = append(out, strings.TrimSpace(line))
	}
	return out
}

// refuseMalformed runs the plugin as the CNI protocol says (environment
// and stdin) with a stanza whose VIP is bad: it must fail, with the error
// on stdout, code 7 (invalid network configuration), naming the field.
func refuseMalformed(t *testing.T, bin string, ctr *testutil.NetNS) {
	t.Helper()
	stdin := []byte(`{"cniVersion": "1.0.0", "name": "bad", "type": "ipvskit",
		"services": [{"vip": "198.18.300.1", "port": 80, "backends": ["198.18.0.1"]}]}`)
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CNI_COMMAND=ADD", "CNI_CONTAINERID=bad", "CNI_NETNS=" + ctr.Path(),
		"CNI_IFNAME=eth0", "CNI_PATH=" + filepath.Dir(bin)}
	out, err := cmd.Output()
	if err == nil {
		t.Fatalf("ADD of a malformed stanza succeeded: %s", out)
	}
	ce := &types.Error{}
	if jerr := json.Unmarshal(out, ce); jerr != nil {
		t.Fatalf("ADD of a malformed stanza: stdout %q is not a CNI error: %v", out, jerr)
	}
	if ce.Code != types.ErrInvalidNetworkConfig || !strings.Contains(ce.Msg, `services[0].vip: "198.18.300.1"`) {
		t.Errorf("ADD of a malformed stanza: %+v, want code %d naming services[0].vip", ce, types.ErrInvalidNetworkConfig)
	}
}

// addNeighbour makes another program's virtual server and nft table in
// ns, and returns their state.
func addNeighbour(t *testing.T, ns *testutil.NetNS) string {
	t.Helper()
	ns.Exec(t, "ipvsadm", "-A", "-t", neighbour, "-s", "wlc")
	ns.Exec(t, "ipvsadm", "-a", "-t", neighbour, "-r", "198.18.0.9:80", "-m", "-w", "3")
	if _, err := ns.TryExec(t, []byte("table inet neighbour {\n chain input {\n type filter hook input priority 10; policy accept;\n tcp dport 9999 counter accept\n }\n}\n"),
		"nft", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	return neighbourState(t, ns)
}

func neighbourState(t *testing.T, ns *testutil.NetNS) string {
	t.Helper()
	var lines []string
	for l := range strings.Lines(testutil.IPVSAdmSave(t, ns)) {
		if strings.Contains(l, neighbour) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "") + ns.Exec(t, "nft", "list", "table", "inet", "neighbour")
}

// ours is the part of an ipvsadm -Sn listing that is the VIP's.
func ours(save string) string {
	var b strings.Builder
	for l := range strings.Lines(save) {
		if strings.Contains(l, vip+":80") {
			b.WriteString(l)
		}
	}
	return b.String()
}
