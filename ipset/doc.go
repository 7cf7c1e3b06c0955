// Package ipset is a client for the Linux kernel's ipset subsystem, spoken
// over netfilter netlink (NETLINK_NETFILTER, subsystem NFNL_SUBSYS_IPSET)
// without running ipset(8). A Client works in one network namespace, chosen
// at New, and is safe for concurrent use.
//
// It negotiates the protocol version (7, or 6 on old kernels) and each set
// type's revision with the kernel, creates, destroys, flushes, renames, swaps
// and lists sets (a large list spans many messages; List merges them), and
// adds, deletes and tests entries, batched many to a message and many
// messages to a send with one ack per send. Replace swaps a filled temporary
// set in, so that iptables rules referencing the set never see it half
// filled.
//
// The set types a service proxy needs are supported, for IPv4 and IPv6:
// hash:ip, hash:ip,port, hash:ip,port,ip, hash:ip,port,net, hash:net,
// hash:net,port and bitmap:port, with the timeout, counters and comment
// extensions. Entries use net/netip. Sets and entries render as, and parse
// from, the text of `ipset save` / `ipset restore` (WriteText, ParseText).
// Package ipsettest has an in-memory Fake with the kernel's semantics.
//
// Errors from the kernel are *Error values wrapping a class (ErrSetFull,
// ErrElementExists, ErrTypeMismatch, ErrInUse, ...) or the errno, so that
// errors.Is works with those and with fs.ErrExist and fs.ErrNotExist. Bad
// input is a *ValidationError naming the field, found before anything is
// sent.
//
// Example: keep the set of service VIPs and ports that an iptables rule
// matches with `-m set --match-set SERVICES dst,dst`.
//
//	c, err := ipset.New(nil) // the calling thread's network namespace
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//
//	set := ipset.Set{Name: "SERVICES", Type: ipset.HashIPPort, MaxElem: 1 << 20}
//	err = c.Replace(ctx, set, []ipset.Entry{
//		{IP: netip.MustParseAddr("198.18.0.10"), Proto: ipset.TCP, Port: 80},
//		{IP: netip.MustParseAddr("198.18.0.10"), Proto: ipset.UDP, Port: 53},
//	})
//	if errors.Is(err, ipset.ErrInUse) {
//		// a dump of the set kept it busy through every retry
//	}
//
//	// Later, incremental changes:
//	err = c.Add(ctx, "SERVICES", ipset.Entry{IP: netip.MustParseAddr("198.18.0.11"), Proto: ipset.TCP, Port: 443})
//	ok, err := c.Test(ctx, "SERVICES", ipset.Entry{IP: netip.MustParseAddr("198.18.0.11"), Proto: ipset.TCP, Port: 443})
package ipset
