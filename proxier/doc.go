// Package proxier makes a network namespace serve a desired state of
// services and endpoints, as kube-proxy's IPVS mode does for a Kubernetes
// node, without Kubernetes.
//
// A caller describes the services (cluster IPs, ports, external and
// load-balancer IPs, node ports, affinity, traffic policies, scheduler) and
// their endpoints as a State, and calls Sync (or Update with the services
// that changed). The Proxier validates the whole State first (a *ValidationError lists every problem with its path and value,
// and nothing is applied), computes what the kernel must hold (a virtual
// server per cluster IP, external IP, load-balancer IP and node address with
// a node port; the VIPs bound on a dummy link, but an external or
// load-balancer IP that is a node address, local already; netfilter sets
// and rules per family), and applies only the difference from what it last applied: a
// no-op Sync sends nothing, a one-endpoint change is one IPVS request, and
// destinations are updated in place, never deleted and re-added. The order
// never opens a VIP before its rules and virtual servers exist: rules (old
// and new entries) first, then virtual servers, then VIPs; removals run in
// reverse, and the final rules come last.
//
// Open makes a Proxier for one network namespace (the caller's, or one
// given by a file descriptor) and opens every kernel client it works
// through: IPVS, the VIP link, sysctls, conntrack, and the netfilter back end
// Config.Backend names for each family. The Proxier's Close closes them.
// New is the other way in: the caller builds the clients, or fakes
// (ipvstest, dummytest, sysctltest) for unit tests, and passes them through
// small interfaces (Deps); it owns them and closes them itself. Either way
// nothing in the kernel changes until the first Sync.
//
// Plan returns what a Sync would do without doing it; its String is the plan
// as ipvsadm -R, nft or iptables-restore, and ip addr lines.
//
// A complete program, in the node's namespace (see examples/ for one that
// builds its own namespaces and sends traffic):
//
//	p, err := proxier.Open(ctx, nil, 0) // nftables, IPv4, this namespace
//	if err != nil {
//		return err
//	}
//	defer p.Close()
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
// Text form: DecodeState reads a State from JSON or YAML, one design in
// both (docs/state-format.md is its reference), and State.MarshalJSON,
// State.UnmarshalJSON, State.MarshalYAML, State.UnmarshalYAML and
// EncodeStateYAML make encoding/json and go.yaml.in/yaml/v3 use it:
//
//	services:
//	  default/web:
//	    clusterIPs: [198.18.100.1]
//	    ports:
//	      - {name: http, protocol: TCP, port: 80, targetPort: 8080}
//	    sessionAffinity: {timeout: 10m}
//	    externalTrafficPolicy: Local
//	    scheduler: sh
//	    schedulerFlags: [sh-fallback, sh-port]
//	    endpoints:
//	      - {addr: 198.18.1.1, ready: true}
//	node:
//	  addresses: [198.18.0.10]
//
// Field names are the Go names in lower camel case, the same as the paths
// of a ValidationError's problems; services and an endpoint's ports are
// objects keyed by service ID and port name. Addresses and prefixes are
// strings; protocols ("TCP", "UDP", "SCTP") and traffic policies
// ("Cluster", "Local") are words, read in any case; durations are Go
// durations ("10m", "3h", "600s") or a number of seconds; scheduler flags
// are a list of ipvsadm's names for them (ipvs.SchedFlags.Names). A field
// that is absent or null keeps its zero value, except a port's protocol,
// which is TCP. In Go a port's Protocol is inet.Protocol (proxier.TCP is
// inet.TCP), as every ipvskit package takes it; only the files write its
// name upper case, as Kubernetes does.
//
// Decoding checks the form: JSON or YAML syntax, fields, types, words,
// addresses, durations and flag names. It does not check the values the
// way Sync does (port ranges, address families, duplicates, ...): that is
// State.Validate, which Sync calls, or DecodeValidState, which does both
// in one pass. Every problem is reported, as a *ValidationError whose paths
// are those of validation, each with the line it is on (Problem.Line): one
// errors.As catches a file's problems whether decoding or validation finds
// them. DecodeStateWith reads a State from under a key of a larger file,
// its paths starting with the key. To see the plan of a State without a
// kernel, sync a Proxier over proxiertest.NewFakeDeps.
//
// Missing kernel features: Preflight, called before anything is built,
// probes the namespace for everything a Proxier for a Config needs (IPVS and
// the schedulers in use, dummy links, the back end's nftables expressions or
// iptables matches and ipset types, ctnetlink, the profile's sysctls),
// changing nothing, and returns one *UnsupportedFeatureError (Feature,
// Module; errors.Is ErrNotSupported) per missing module, all joined, so the
// operator loads them at once instead of meeting them one Sync at a time.
//
// Cost: a Proxier keeps a copy of each service it serves and what the
// services add to the kernel state together. Update takes changed services
// by ID, as an informer delivers them, and validates, computes and plans
// only those (checked against the others for a frontend, node port or node
// address used twice), so its cost, in user space as in the kernel, follows
// the change and not the number of services; the back ends write only the
// set members that change. Sync of a whole State does the same once the
// kernel is known (after the first Sync, and until one fails), having
// compared each service with its copy; a change of the node's facts, a
// first Sync and the Sync after a failure compute everything.
//
// Graceful termination: an endpoint that leaves a TCP virtual server that
// stays is not deleted but set to weight 0 (one update, shown in the plan):
// it takes no new connections while its open ones carry on, until Drain
// (called on the caller's timer) deletes it. UDP and SCTP destinations are
// deleted at once; a virtual server that goes takes its destinations with
// it; one that comes back while draining returns to its weight in place. A
// new Proxier rebuilds the list from what its first Sync reads back, so an
// earlier run's weight-0 destinations drain too. Result.Draining and
// DrainResult.Draining are the queue's length. Serving and Terminating
// endpoints are used only when no endpoint is Ready, as kube-proxy does.
//
// Weights: an Endpoint's Weight (1 when zero), Quiesced (weight 0, kept
// and not drained) and connection thresholds go to each of its
// destinations. A change of one is one update of the destination; a
// restarted Proxier whose State has the weights the kernel holds sends
// nothing, and Reconcile repairs a weight only where it differs from the
// State's. An endpoint that drains is at weight 0 whatever its Weight, and
// returns to it. Two endpoints of a service that would be one destination
// are refused by validation.
//
// Drift: others can change what the Proxier applied (ipvsadm, ip addr,
// ipset, iptables, nft, sysctl -w). Reconcile, called on the caller's timer,
// repairs every difference from what the Proxier last applied and reports
// each.
//
// Ownership: the Proxier changes or deletes only what it can prove it made,
// by a mark it put there, never by a name or an address alone. Its names
// derive from Config.Instance ("ipvskit" by default): the VIP link
// "ipvskit0", marked by its alias "ipvskit:ipvskit" (dummy.Config.Owner),
// and the netfilter back end's table, or chains and ipsets, marked as
// package iptables says (Ownership). Virtual servers cannot be marked, so
// the rules hold a ledger: the VirtualServers and IPVSIPs sets, written
// before a virtual server or VIP is made and trimmed after it is gone (a
// firewall-mark virtual server under an address no VIP can have, see
// Service.FirewallMark). A restarted Proxier owns what the ledger says,
// and nothing else: another
// program's virtual server, even on one of its VIPs at another port, or at a
// node port on a node address, is never read into a plan; an address on its
// link that the ledger lacks (the kernel's fe80::, a network someone added)
// is never unbound. A foreign virtual server at a VIP:port the State asks
// for makes Sync fail with a *ConflictError naming both (errors.Is
// fs.ErrExist) before anything is sent. An object of the Proxier's names
// without its mark (a link, a table, a chain, an ipset: another program's,
// or an earlier ipvskit version's, which wrote no marks) makes the first
// Sync fail with an error that names it and wraps fs.ErrExist, before the
// link or any sysctl is touched; Cleanup leaves it. Several instances share
// a namespace under either back end. Config.KubeProxyNames opts into
// kube-proxy's names (kube-ipvs0, KUBE-*, table kube-proxy) for taking over
// a kube-proxy node; objects kube-proxy made carry no mark and are still
// never touched, unless Config.AdoptKubeProxy says to take them over.
//
// Connection sync for failover: Config.SyncDaemons names the IPVS
// connection-sync daemons the Proxier runs, a Master that sends this node's
// connections and a Backup that takes a peer's in, so that when the VIP
// moves to the other load balancer (VRRP, or whatever moves it) the open
// connections carry on there. The first Sync starts them after the
// services (its plan shows `ipvsadm --start-daemon` lines), adopting one
// that runs with exactly the configured parameters (a restart keeps
// syncing); one in a configured role with other parameters that the
// Proxier did not start is someone else's, and Sync fails with a
// *DaemonConflictError (errors.Is fs.ErrExist) before anything is applied.
// A daemon has no mark, so the Config is the proof of ownership: a role the
// Config does not name is never touched. Reconcile restarts a stopped
// daemon and replaces one whose parameters changed, each as drift; Cleanup
// stops them. docs/failover.md shows a pair of load balancers.
//
// Take-over preview: before the first Sync of a Proxier with
// Config.AdoptKubeProxy, PreviewTakeover reads back what kube-proxy
// programmed and returns, per Service, every change that Sync would make
// to it (virtual servers added, deleted or updated, destinations and their
// weights, VIPs bound and unbound, ipset members; kube-proxy's leftovers
// under their own heading), changing nothing. An empty TakeoverPreview is a take-over
// without a blip. docs/takeover.md has the procedure.
package proxier
