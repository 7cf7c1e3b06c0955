package conformance

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/kube/agent"
	"github.com/ipvskit/ipvskit/proxier"
)

// itpLocalService is issue 29's shape: internalTrafficPolicy Local, a
// NodePort (externalTrafficPolicy Cluster), and no endpoint on the node.
// kube-proxy's IPVS mode gives its cluster IP every endpoint (its fallback
// for a Service with external access, kubernetes#97081); ipvskit gives it
// none, as Kubernetes' API says (docs/kube-proxy-differences.md).
func itpLocalService() (step, alloc) {
	a := alloc{k: 100 + takeoverServices}
	return st(a.svc("itp-np", http, a.typ(v1.ServiceTypeNodePort), iTPLocal),
		slice("itp-np", "a", false, []sport{httpP}, ready(1, ""), ready(2, ""))), a
}

// dryRun runs the agent's dry run (ipvskit-proxy --adopt-kube-proxy
// --dry-run, but for parsing its flags) on the node, fed with s's objects
// through a fake API client, and returns the preview it prints.
func dryRun(t *testing.T, r *rig, s step) *proxier.TakeoverPreview {
	t.Helper()
	objs := []runtime.Object{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName},
		Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: nodeAddr}}}}}
	for _, o := range s.objects() {
		objs = append(objs, o.(runtime.Object))
	}
	k, err := agent.OpenKernel(r.node.Handle())
	must(t, err)
	defer k.Close()
	cfg := agent.DefaultConfig()
	for _, c := range nodePortCIDRs {
		cfg.NodePortAddresses = append(cfg.NodePortAddresses, netip.MustParsePrefix(c).Masked())
	}
	a, err := agent.New(agent.Options{Config: cfg, NodeName: nodeName, Client: fake.NewClientset(objs...),
		Proxier:    proxier.Config{KubeProxyNames: true, AdoptKubeProxy: true, Backend: proxier.IPTables, Families: []proxier.Family{proxier.IPv4, proxier.IPv6}},
		NewProxier: k.NewProxier, NodeAddresses: k.NodeAddresses})
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	tp, err := a.PreviewTakeover(ctx)
	must(t, err)
	t.Logf("ipvskit-proxy --adopt-kube-proxy --dry-run:\n%s", tp)
	return tp
}

// TestTakeOverPreviewedUnderTraffic: kube-proxy configures a node with the
// take-over Services and one of issue 29's shape (itpLocalService), and
// serves live traffic; kube-proxy stops. The dry run previews the
// take-over and changes nothing in the kernel (ipvsadm -Sn, ipset save,
// iptables-save, kube-ipvs0's addresses and alias identical). The preview
// lists exactly one kind of change: the itp-local cluster IP's
// destinations going to weight 0. The take-over then makes exactly those
// IPVS changes, no request to any other Service fails through it, and
// requests to that cluster IP get no backend after it.
func TestTakeOverPreviewedUnderTraffic(t *testing.T) {
	r := newRig(t)
	extra, a := itpLocalService()
	s := takeoverStep(false)
	s.services, s.slices = append(s.services, extra.services...), append(s.slices, extra.slices...)
	clusterIP := netip.AddrPortFrom(netip.MustParseAddr(a.clusterIP()), 80)
	kp := newKubeProxy(t, r, s)
	if saved := r.node.Exec(t, "ipvsadm", "-Sn"); !strings.Contains(saved, "-a -t "+clusterIP.String()+" -r ") {
		t.Fatalf("kube-proxy gave %v no destination: not the shape of issue 29\n%s", clusterIP, saved)
	}
	tr := startTrafficExcept(t, r, s, clusterIP)
	tr.wait(t, "kube-proxy serving")
	kp.stop(t)
	tr.wait(t, "kube-proxy stopped")

	before, linkBefore := readState(t, r), r.node.Exec(t, "ip", "-o", "link", "show", "dev", "kube-ipvs0")
	tp := dryRun(t, r, s)
	after, linkAfter := readState(t, r), r.node.Exec(t, "ip", "-o", "link", "show", "dev", "kube-ipvs0")
	for _, c := range []struct {
		what       string
		was, isNow []string
	}{
		{"ipvsadm -Sn", before.ipvs, after.ipvs}, {"kube-ipvs0's addresses", before.vips, after.vips},
		{"ipset save", before.ipsets, after.ipsets}, {"iptables-save", before.iptables, after.iptables},
		{"ip link show kube-ipvs0", lines(linkBefore), lines(linkAfter)},
	} {
		if d := diff(c.was, c.isNow); len(d) > 0 {
			t.Errorf("the dry run changed %s:\n%s", c.what, strings.Join(d, "\n"))
		}
	}
	var want []proxier.TakeoverChange
	for _, b := range []int{1, 2} {
		want = append(want, proxier.TakeoverChange{ServiceID: namespace + "/itp-np:http", Frontend: "ClusterIP http",
			Object: fmt.Sprintf("destination %s:8080 of tcp %v", backendAddr(b, false), clusterIP), Change: "weight 1 -> 0 (no new connections)"})
	}
	if d := cmp.Diff(want, tp.Changes); d != "" {
		t.Errorf("preview (-want +got):\n%s", d)
	}

	ik := newIPVSKitAdopting(t, r, proxier.IPTables, true)
	res := ik.sync(t, s)
	var made []string
	for _, op := range append(res.Plan.IPVSAdd.Ops(), res.Plan.IPVSDelete.Ops()...) {
		made = append(made, fmt.Sprintf("%v %v -> %v weight %d", op.Kind, op.Service.Key(), op.Destination.Key(), op.Destination.Weight))
	}
	var previewed []string
	for _, b := range []int{1, 2} {
		previewed = append(previewed, fmt.Sprintf("%v tcp %v -> %s:8080 weight 0", ipvs.OpUpdateDestination, clusterIP, backendAddr(b, false)))
	}
	if slices.Sort(made); !slices.Equal(made, previewed) || len(res.Plan.Bind)+len(res.Plan.Unbind) > 0 {
		t.Errorf("the take-over made %v, bound %v, unbound %v; the preview said %v only", made, res.Plan.Bind, res.Plan.Unbind, previewed)
	}
	tr.wait(t, "ipvskit took over")
	var got string
	r.client.Do(t, func() {
		got = exchange("tcp", netip.AddrPortFrom(netip.MustParseAddr(clientAddr), 0), clusterIP, 3*time.Second)
	})
	if strings.HasPrefix(got, "b") {
		t.Errorf("after the take-over %v answered %q, want no backend (the preview's weight 0)", clusterIP, got)
	}
	t.Logf("after the take-over, %v: %s", clusterIP, got)
	tr.stop(t)
}
