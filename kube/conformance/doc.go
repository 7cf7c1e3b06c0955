// Package conformance holds ipvskit's conformance test against kube-proxy's
// real IPVS proxier (bench/kubeproxy, built by scripts/kube-proxy-oracle).
//
// The test runs only inside the VM rig. A corpus of cases (corpus_test.go),
// each a sequence of Services and EndpointSlices, is applied once by
// kube-proxy and once by an ipvskit Proxier with kube-proxy's names and the
// iptables back end (the converter of package convert turns the objects into
// a proxier.State), each in a fresh node namespace with the same clients and
// backends around it. After every step the two nodes' IPVS tables, bound
// VIPs, ipsets and iptables rules are compared, and real traffic is sent to
// every address and port the step's Services expose: who answers, whether the
// client's source address reaches the backend, and whether the client is
// dropped must be the same on both nodes. The same corpus runs again with
// ipvskit's nftables back end, where only the IPVS tables, the VIPs and the
// traffic are compared. Differences that are deliberate are listed, with
// their reasons, in docs/kube-proxy-differences.md; any other difference
// fails the test.
package conformance
