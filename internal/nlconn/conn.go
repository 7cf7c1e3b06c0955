package nlconn

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
	// NetNS is a file descriptor of the network namespace to open the
	// socket in; 0 means the namespace of the calling thread. It is
	// duplicated at Dial, so the caller may close it afterwards, and every
	// re-dial uses the same namespace.
	NetNS int

	// BufferSize is the socket buffer size to ask for; 0 means
	// DefaultBufferSize.
	BufferSize int
}
