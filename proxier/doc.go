// Package proxier makes a network namespace serve a desired state of
// services and endpoints, as kube-proxy's IPVS mode does for a Kubernetes
// node, without Kubernetes.
//
// A caller describes the services (cluster IPs, ports, external and
// load-balancer IPs, node ports, affinity, traffic policies, scheduler) and
// their endpoints as a State, and calls Sync. The Proxier validates the whole
// State first (a *ValidationError lists every problem with its path and value,
// and nothing is applied), computes what the kernel must hold (a virtual
// server per cluster IP, external IP, load-balancer IP and node address with
// a node port; the VIPs bound on a dummy link; netfilter sets and rules per
// family), and applies only the difference from what it last applied: a
// no-op Sync sends nothing, a one-endpoint change is one IPVS request, and
// destinations are updated in place, never deleted and re-added. The order
// never opens a VIP before its rules and virtual servers exist: rules (old
// and new entries) first, then virtual servers, then VIPs; removals run in
// reverse, and the final rules come last.
//
// The kernel clients come in through small interfaces (Deps), so the
// packages' fakes (ipvstest, dummytest, sysctltest) stand in for unit tests.
// Plan returns what a Sync would do without doing it; its String is the plan
// as ipvsadm -R, nft or iptables-restore, and ip addr lines.
//
// A complete program, in the node's namespace (see examples/ for one that
// builds its own namespaces and sends traffic):
//
//	ipvsc, _ := ipvs.New(nil)
//	link, _ := dummy.New(nil)
//	sys, _ := sysctl.New(nil)
//	rules, _ := iptables.NewNFTables(nil)
//	p, err := proxier.New(nil, proxier.Deps{
//		IPVS: ipvsc, Link: link, Sysctls: sys,
//		Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: rules},
//	})
//	if err != nil {
//		return err
//	}
//	state := proxier.State{Services: map[string]proxier.Service{
//		"default/web": {
//			ClusterIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
//			Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
//			Endpoints: []proxier.Endpoint{
//				{Addr: netip.MustParseAddr("198.18.1.1"), Ready: true},
//				{Addr: netip.MustParseAddr("198.18.1.2"), Ready: true},
//			},
//		},
//	}}
//	res, err := p.Sync(ctx, &state)
//	if err != nil {
//		return err
//	}
//	fmt.Print(res.Plan) // what it did
//
// Graceful termination: an endpoint that leaves a TCP virtual server that
// stays is not deleted but set to weight 0 (one update, shown in the plan):
// it takes no new connections while its open ones carry on. Drain, which
// the caller calls on its own timer (nothing runs in the background),
// deletes such destinations once the kernel counts no active or inactive
// connections on them, or once they have drained for Config.MaxDrain (15
// minutes by default), in one batch. UDP and SCTP destinations are deleted
// at once; a virtual server that goes takes its destinations with it; one
// that comes back while draining returns to its weight in place. A new
// Proxier rebuilds the list from what its first Sync reads back, so an
// earlier run's weight-0 destinations drain too. Result.Draining and
// DrainResult.Draining are the queue's length. Serving and Terminating
// endpoints are used only when no endpoint is Ready, as kube-proxy does.
//
// Drift: others can change what the Proxier applied (ipvsadm, ip addr,
// ipset, iptables, nft, sysctl -w). Reconcile, called on a timer the caller
// controls, reads the kernel back (one read per subsystem), repairs every
// difference from what the Proxier last applied, and returns a report of
// each (subsystem, object, problem); it runs one at a time with Sync.
//
// Ownership: the Proxier changes only its VIP link, the virtual servers it
// applied and those on its link's addresses (an earlier run's: a new
// Proxier takes them over without re-creating anything, and deletes those
// the State no longer has), and its back ends' own tables, chains and sets.
// Other virtual servers are never read into a plan, so never changed; one
// that holds a VIP:port the State asks for makes Sync fail with a
// *ConflictError naming both (errors.Is fs.ErrExist), and if the kernel
// refused an add because of it, the destinations the same batch added to it
// are taken back. NodePort virtual servers on node addresses carry no mark
// of their owner: one at a node port the State asks for is taken over.
package proxier
