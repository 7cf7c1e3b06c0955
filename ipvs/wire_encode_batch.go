package ipvs

import "github.com/mdlayher/netlink"

// Encoding buffers of a batch: chunks of bufChunk bytes, a new one once
// fewer than maxRequest bytes are left. No request of a valid batch comes
// near maxRequest (the largest, an IPv6 tunnel destination, is about 150
// bytes); one that did would only make append move it to a larger array.
const (
	bufChunk   = 64 << 10
	maxRequest = 256
)

// batchMessages encodes every request of b, in order, as a message of the
// generic netlink family typ. The payloads are packed into a few large
// buffers, each message's Data a full slice of one. The requests are read
// from b's compact form, each with the Service its run shares (a
// destination request encodes only its identity fields); no Op is made.
func batchMessages(b *Batch, typ netlink.HeaderType) []netlink.Message {
	msgs := make([]netlink.Message, len(b.reqs))
	var buf []byte
	for i := range b.reqs {
		if cap(buf)-len(buf) < maxRequest {
			buf = make([]byte, 0, min(bufChunk, 128*(len(b.reqs)-i)))
		}
		start := len(buf)
		r := &b.reqs[i]
		d := r.dest()
		buf = appendRequest(buf, r.kind, b.svcs.at(r.svc), &d)
		msgs[i] = netlink.Message{Header: netlink.Header{Type: typ}, Data: buf[start:len(buf):len(buf)]}
	}
	return msgs
}
