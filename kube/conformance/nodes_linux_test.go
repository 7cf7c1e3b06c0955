package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/internal/names"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/kube/convert"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl"
)

// EnvOracle names the kube-proxy oracle binary (scripts/kube-proxy-oracle
// prints it; make test sets it).
const EnvOracle = "IPVSKIT_KUBE_PROXY_ORACLE"

// syncTimeout bounds one sync by either side; kube-proxy runs ipset and
// iptables once per set entry and chain, which costs seconds each in the
// emulated VM.
const syncTimeout = 15 * time.Minute

// kubeProxy is kube-proxy's IPVS proxier, run by the oracle in the rig's
// node namespace and fed through its state file.
type kubeProxy struct {
	file  string
	lines *bufio.Scanner
	syncs int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	last  oracleReport // of the last sync
}

func newKubeProxy(t *testing.T, r *rig, first step) *kubeProxy {
	t.Helper()
	bin := os.Getenv(EnvOracle)
	if bin == "" {
		testutil.Missing(t, "kube-proxy's IPVS proxier ("+EnvOracle+", from scripts/kube-proxy-oracle)", "unset")
	}
	k := &kubeProxy{file: filepath.Join(t.TempDir(), "objects.yaml")}
	k.write(t, first)
	args := []string{"-state", k.file, "-node", nodeName, "-node-ip", nodeAddr + "," + nodeAddr6}
	if !r.allNodePorts {
		args = append(args, "-nodeport-addresses", nodePortCIDRs[0]+","+nodePortCIDRs[1])
	}
	if len(r.exclude) > 0 {
		args = append(args, "-ipvs-exclude-cidrs", strings.Join(r.exclude, ","))
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe() // its end of input would stop it
	if err != nil {
		t.Fatal(err)
	}
	k.cmd, k.stdin = cmd, in
	r.node.Start(t, cmd)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-proxy's log:\n%s", tail(stderr.String(), 4000))
		}
	})
	k.lines = bufio.NewScanner(out)
	k.wait(t)
	return k
}

// stop ends kube-proxy as a node's upgrade would, leaving its kernel state
// as it is.
func (k *kubeProxy) stop(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(k.stdin, "exit\n"); err != nil {
		t.Fatal(err)
	}
	if err := k.cmd.Wait(); err != nil {
		t.Fatalf("kube-proxy oracle exited: %v", err)
	}
}

func (k *kubeProxy) apply(t *testing.T, s step) {
	t.Helper()
	k.write(t, s)
	k.wait(t)
}

// write replaces the state file in one rename, which the oracle sees.
func (k *kubeProxy) write(t *testing.T, s step) {
	t.Helper()
	var buf bytes.Buffer
	for _, o := range s.objects() {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	tmp := k.file + ".new"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, k.file); err != nil {
		t.Fatal(err)
	}
}

// wait reads the oracle's next sync report.
func (k *kubeProxy) wait(t *testing.T) {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- k.lines.Scan() }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatalf("kube-proxy oracle ended: %v", k.lines.Err())
		}
	case <-time.After(syncTimeout):
		t.Fatalf("kube-proxy did not finish sync %d in %v", k.syncs+1, syncTimeout)
	}
	var rep oracleReport
	if err := json.Unmarshal(k.lines.Bytes(), &rep); err != nil || rep.Sync != k.syncs+1 {
		t.Fatalf("kube-proxy oracle wrote %q, want sync %d", k.lines.Text(), k.syncs+1)
	}
	k.syncs, k.last = k.syncs+1, rep
}

// oracleReport is the oracle's line after a sync (bench/kubeproxy).
type oracleReport struct {
	Sync    int
	Seconds float64
	Calls   struct{ IPVS, IPVSRead, IPSet, IPTables int }
}

// nodePortCIDRs limit node ports to the client-facing addresses, on both
// sides.
var nodePortCIDRs = []string{nodeAddr + "/24", nodeAddr6 + "/64"}

// ipvskit is a Proxier with kube-proxy's names, fed by the converter.
type ipvskit struct {
	p *proxier.Proxier
	r *rig
}

func newIPVSKit(t *testing.T, r *rig, backend proxier.Backend) *ipvskit {
	t.Helper()
	return newIPVSKitAdopting(t, r, backend, false)
}

// newIPVSKitAdopting is newIPVSKit, adopting kube-proxy's objects if adopt
// (Config.AdoptKubeProxy, and the iptables back end's).
func newIPVSKitAdopting(t *testing.T, r *rig, backend proxier.Backend, adopt bool) *ipvskit {
	t.Helper()
	cfg := &proxier.Config{KubeProxyNames: true, AdoptKubeProxy: adopt, Backend: backend, Families: []proxier.Family{proxier.IPv4, proxier.IPv6}}
	for _, s := range r.exclude {
		cfg.ExcludeCIDRs = append(cfg.ExcludeCIDRs, netip.MustParsePrefix(s))
	}
	h := r.node.Handle()
	ic, err := ipvs.New(&ipvs.Config{NetNS: h})
	must(t, err)
	t.Cleanup(func() { ic.Close() })
	link, err := dummy.New(&dummy.Config{NetNS: h, Owner: names.Mark(names.DefaultInstance)})
	must(t, err)
	t.Cleanup(func() { link.Close() })
	sys, err := sysctl.New(&sysctl.Config{NetNS: h})
	must(t, err)
	t.Cleanup(func() { sys.Close() })
	deps := proxier.Deps{IPVS: ic, Link: link, Sysctls: sys, Rules: map[proxier.Family]proxier.Rules{}}
	for _, f := range cfg.Families {
		fam := iptables.IPv4
		if f == proxier.IPv6 {
			fam = iptables.IPv6
		}
		var rules proxier.Rules
		if backend == proxier.IPTables {
			// kube-proxy runs "iptables", which is iptables-nft on Debian.
			rules, err = iptables.NewIPTables(&iptables.IPTablesConfig{NetNS: h, Family: fam, Flavor: iptables.FlavorNFT,
				KubeProxyNames: true, AdoptKubeProxy: adopt})
		} else {
			rules, err = iptables.NewNFTables(&iptables.NFTablesConfig{NetNS: h, Family: fam, KubeProxyNames: true})
		}
		must(t, err)
		t.Cleanup(func() { rules.(interface{ Close() error }).Close() })
		deps.Rules[f] = rules
	}
	p, err := proxier.New(cfg, deps)
	must(t, err)
	return &ipvskit{p: p, r: r}
}

func (k *ipvskit) apply(t *testing.T, s step) {
	t.Helper()
	k.sync(t, s)
}

// sync is apply, returning the Sync's Result.
func (k *ipvskit) sync(t *testing.T, s step) *proxier.Result {
	t.Helper()
	st := k.state(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	res, err := k.p.Sync(ctx, &st)
	if err != nil {
		t.Fatalf("ipvskit Sync: %v", err)
	}
	return res
}

// state is the State s converts to on the rig's node.
func (k *ipvskit) state(t *testing.T, s step) proxier.State {
	t.Helper()
	node := convert.Node{
		Name:          nodeName,
		Addresses:     []netip.Addr{netip.MustParseAddr(nodeAddr), netip.MustParseAddr(nodeAddr6)},
		NodePortCIDRs: []netip.Prefix{netip.MustParsePrefix(nodePortCIDRs[0]).Masked(), netip.MustParsePrefix(nodePortCIDRs[1]).Masked()},
		Families:      []proxier.Family{proxier.IPv4, proxier.IPv6},
	}
	if k.r.allNodePorts {
		// Node ports on every address of the node, as kube-proxy without
		// --nodeport-addresses: the node's addresses are all of them.
		node.Addresses, node.NodePortCIDRs = k.r.nodeAddrs(t), nil
	}
	st, skipped := convert.Convert(convert.Input{Services: s.services, Slices: s.slices, Node: node})
	for _, sk := range skipped {
		t.Logf("converter skipped %s: %s", sk.Service, sk.Reason)
	}
	return st
}

func (s step) objects() []any {
	var out []any
	for _, o := range s.services {
		out = append(out, o)
	}
	for _, o := range s.slices {
		out = append(out, o)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
