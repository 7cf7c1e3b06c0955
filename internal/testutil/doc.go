// Package testutil holds the helpers ipvskit's tests share: throwaway network
// namespaces, and skips for missing kernel features that turn into failures
// inside the VM rig, where nothing may be missing.
//
// A kernel test starts like this:
//
//	func TestIntegrationThing(t *testing.T) {
//		ns := testutil.NewNetNS(t)          // root + fresh netns with lo up, closed by t.Cleanup
//		testutil.RequireIPVS(t, ns)         // skip (fail in the rig) if the kernel has no IPVS
//		ns.Do(t, func() { ... })            // runs on a locked OS thread inside ns
//		out := ns.Exec(t, "ipvsadm", "-Sn") // a reference tool inside ns
//	}
//
// Tests never touch the namespace they were started in. Package netnstest
// is the public counterpart for users' kernel tests (namespaces, veths,
// routes, TCP and UDP backends); new tests may use it directly.
package testutil
