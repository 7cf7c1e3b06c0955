// Package ipvs is a client for the Linux kernel's IP Virtual Server (IPVS)
// over generic netlink, with no cgo and no exec: services (TCP, UDP, SCTP
// over IPv4 or IPv6, or firewall marks), schedulers and their flags,
// persistence, destinations (masquerading, direct routing, ipip/gue/gre
// tunnels, local), weights and thresholds, 64-bit statistics, timeouts,
// connection-sync daemons, zero and flush, and a Batch that sends many
// requests per system call with one kernel ack per send.
//
// # Opening a client
//
// A Client manages one network namespace, chosen once by Config.NetNS (the
// zero value is the caller's own). It is safe for concurrent use, and every
// method that talks to the kernel takes a context whose deadline and
// cancellation bound the call. New fails with an error wrapping
// ErrNotSupported when the kernel has no IPVS (module ip_vs not loaded).
//
// # Identity and state
//
// Service and Destination are comparable values; their Key methods return
// the identity (ServiceKey, DestinationKey), which makes map keys for
// diffing desired against actual state. What the kernel reports comes back
// as ServiceInfo and DestinationInfo, which add counters and connection
// counts.
//
// # Errors
//
// Every error names the operation and object (*Error), carries the kernel's
// extended-ack message, and wraps its cause: errors.Is(err, fs.ErrExist) for
// duplicates, errors.Is(err, fs.ErrNotExist) for missing services or
// destinations, errors.Is(err, unix.EINVAL) for bad arguments. Arguments are
// validated before anything is sent; a refused argument is a
// *ValidationError naming the field and value (and still matches
// unix.EINVAL).
//
// # Example
//
// A service with two masquerading destinations, created in one batch, and
// read back with its counters:
//
//	c, err := ipvs.New(nil) // the current network namespace
//	if err != nil {
//		return err // errors.Is(err, ipvs.ErrNotSupported): no ip_vs module
//	}
//	defer c.Close()
//
//	svc := ipvs.Service{
//		Protocol:  ipvs.TCP,
//		Addr:      netip.MustParseAddr("198.18.0.1"),
//		Port:      80,
//		Scheduler: "rr",
//	}
//	var b ipvs.Batch
//	b.AddService(svc)
//	for _, a := range []string{"198.18.1.1", "198.18.1.2"} {
//		b.AddDestination(svc.Key(), ipvs.Destination{
//			Addr:    netip.MustParseAddr(a),
//			Port:    8080,
//			Forward: ipvs.Masq,
//			Weight:  1,
//		})
//	}
//	if err := c.Apply(ctx, &b); err != nil {
//		return err // a *BatchError lists each failed request
//	}
//
//	info, err := c.GetService(ctx, svc.Key())
//	if err != nil {
//		return err
//	}
//	fmt.Println(info.Stats.Connections, info.Stats.BytesIn)
//
// ipvsadm's text forms live in package ipvs/ipvsadm, which this package
// does not import: a Snapshot (Client.Snapshot) renders as `ipvsadm -Sn`
// prints the same table (ipvsadm.Save, ipvsadm.MarshalSnapshot) and as
// `ipvsadm -Ln` lists it (ipvsadm.WriteTable, with --stats, --rate,
// --thresholds, --persistent-conn, --tun-info or --exact), and a Batch as
// `ipvsadm -R` input (ipvsadm.MarshalBatch). Those were methods here until
// they moved (docs/layout.md): Snapshot.SaveText is ipvsadm.Save,
// Snapshot.MarshalText and UnmarshalText are ipvsadm.MarshalSnapshot and
// UnmarshalSnapshot, Batch.MarshalText and UnmarshalText are
// ipvsadm.MarshalBatch and UnmarshalBatch, Snapshot.WriteTable and
// AppendTable are ipvsadm.WriteTable and AppendTable, and TextError,
// ErrText, TableFormat, TableOptions and the Table* formats keep their
// names in package ipvsadm.
//
// The in-memory fake in package ipvstest satisfies Interface too, for unit
// tests of code that drives IPVS.
package ipvs
