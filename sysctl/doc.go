// Package sysctl reads and writes the kernel settings of one network
// namespace, and applies the profile an IPVS service proxy needs.
//
// Keys are paths below /proc/sys ("net/ipv4/ip_forward") or sysctl(8)'s
// dotted form ("net.ipv4.ip_forward"). Only keys below net/ are accepted:
// they are per network namespace, and the kernel resolves them against the
// namespace of the thread that opens the file, so a Client opens every file
// on a fresh OS thread that has entered its namespace (no other goroutine
// ever runs there) and throws the thread away afterwards. Keys outside net/
// are global; writing one "in a namespace" would change the whole machine,
// so they are refused.
//
// A key that does not exist is a *NotExistError naming the module that
// provides it (ip_vs, br_netfilter, ...) or the interface it is about.
// Nothing loads modules: load them beforehand, or handle
// errors.Is(err, sysctl.ErrNotSupported).
//
// IPVSProfile lists the settings kube-proxy's IPVS mode makes, each with its
// reason; which depend on the kernel version (net/ipv4/vs/conn_reuse_mode is
// set to 0 only before 5.9: from 5.9 the kernel's default is safe,
// kubernetes#93297). Apply makes a profile and returns every change as key,
// old and new value, writing nothing if any key is missing and writing the
// old values back if a write fails half way; Check reports drift without
// changing anything.
//
// Package sysctltest has an in-memory Fake with the same semantics and
// errors, for unit tests.
//
// # Example
//
// Prepare a node for IPVS proxying, with strict ARP on its uplink only:
//
//	c, err := sysctl.New(nil) // the current network namespace
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//
//	p, err := c.IPVSProfile(&sysctl.IPVSOptions{
//		StrictARP:     true,
//		ARPInterfaces: []string{"eth0"},
//	})
//	if err != nil {
//		return err
//	}
//	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
//	defer cancel()
//	changes, err := c.Apply(ctx, p)
//	if errors.Is(err, sysctl.ErrNotSupported) {
//		return fmt.Errorf("load ip_vs and br_netfilter first: %w", err)
//	}
//	if err != nil {
//		return err
//	}
//	for _, ch := range changes {
//		fmt.Printf("%s: %s -> %s\n", ch.Key, ch.Old, ch.New)
//	}
//
// Later, from a periodic check:
//
//	drift, err := c.Check(ctx, p)
//	for _, d := range drift {
//		fmt.Printf("%s is %s, want %s\n", d.Key, d.Old, d.New)
//	}
package sysctl
