// Package nlconn is the netlink plumbing ipvskit's kernel clients share: one
// socket per client, bound to a network namespace chosen once, with request/ack
// and dump calls bounded by a context, and a batch path that packs many
// requests into each sendmsg and asks the kernel for one ack per send.
//
// It is protocol-agnostic: callers build netlink.Message values for their own
// family (generic netlink for IPVS, NETLINK_NETFILTER for ipset) and decode
// the replies themselves, with the attribute codec of package
// internal/nlattr. Kernel errors come back as *Error, which wraps the
// errno (so errors.Is(err, fs.ErrExist) and errors.Is(err, unix.EINVAL) work)
// and carries the kernel's extended-ack message.
//
// A Conn is safe for concurrent use: calls are serialised, so a dump never
// interleaves with a batch in flight. A call cut short by its context leaves
// the socket in an unknown state (replies may still be queued), so the Conn
// closes that socket and dials a fresh one in the same namespace.
package nlconn
