package nlconn

import (
	"context"

	"github.com/mdlayher/netlink"
)

// Transport is what a kernel client needs of its netlink socket: a *Conn,
// or in tests a scripted fake (package nlconntest). The methods are those
// of Conn, with its semantics.
type Transport interface {
	// Execute sends one request and returns its replies (all of a dump
	// when m asks for one).
	Execute(ctx context.Context, m netlink.Message) ([]netlink.Message, error)
	// Batch sends many requests with one ack per send; errs[i] is
	// msgs[i]'s outcome.
	Batch(ctx context.Context, msgs []netlink.Message, opt BatchOptions) (errs []error, err error)
	// Dump sends a dump request and streams its messages to fn.
	Dump(ctx context.Context, m netlink.Message, fn func(h netlink.Header, data []byte) error) error
	// DumpEach runs many dump requests, up to parallel at a time on
	// sockets of their own, and streams msgs[i]'s messages to fn(w, i,
	// ...); failed is the index of the request an error belongs to, or -1.
	DumpEach(ctx context.Context, msgs []netlink.Message, parallel int, fn func(w, i int, h netlink.Header, data []byte) error) (failed int, err error)
	// Buffers reports the socket's receive and send buffer sizes.
	Buffers() (rcv, snd int, err error)
	// Close releases the socket.
	Close() error
}

var _ Transport = (*Conn)(nil)

// Default sizes. The kernel doubles what is asked for socket buffers.
const (
	// DefaultBufferSize is the socket receive and send buffer asked for
	// (with SO_RCVBUFFORCE/SO_SNDBUFFORCE when the process may, else the
	// plain options, which the kernel caps at net.core.{r,w}mem_max).
	DefaultBufferSize = 8 << 20

	// DefaultBatchMessages is the most requests one Batch packs into a
	// single sendmsg.
	DefaultBatchMessages = 1024

	// recvBufLen is the user-space buffer one recvmsg reads into. The
	// kernel never builds a dump message larger than 32 KiB, and sizes dump
	// messages by the largest buffer a reader has offered.
	recvBufLen = 64 << 10

	// failureCost bounds how much receive-buffer space one failed request's
	// error reply takes (the skb's truesize, with the capped request header
	// and an extended-ack message). A send holds at most rcvbuf/failureCost
	// requests, so that even a send in which every request fails has room
	// for all its errors.
	failureCost = 2048
)

// BatchOptions tunes Batch. The zero value means the defaults.
type BatchOptions struct {
	// MaxMessages is the most requests packed into one sendmsg; 0 means
	// DefaultBatchMessages. It is lowered further when the socket's receive
	// buffer could not hold an error for every request of a send, and
	// each send also stays within the socket's send buffer.
	MaxMessages int

	// StopOnError stops the batch after the first send in which a request
	// failed. The kernel still processes every request of that send (it
	// does not stop at a failure within one send); the requests of later
	// sends are not sent and their errors wrap ErrNotSent.
	StopOnError bool
}

// Config says where and how to dial.
type Config struct {
	// NetNS follows the rule of package internal/nsfd: 0 means the
	// calling thread's namespace, a positive value is a descriptor of the
	// namespace (duplicated at Dial, so the caller may close theirs), and a
	// negative value is an error. Every re-dial uses the same namespace.
	NetNS int

	// BufferSize is the socket buffer size to ask for; 0 means
	// DefaultBufferSize.
	BufferSize int
}
