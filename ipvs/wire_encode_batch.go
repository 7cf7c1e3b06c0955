package ipvs

import "github.com/mdlayher/netlink"

// batchMessages encodes every request of b, in order, as a message of the
// generic netlink family typ. The payloads share one buffer (about 100 bytes
// a request), each message's Data a full slice of it. The requests are read
// from b's compact form; no Op slice is made.
func batchMessages(b *Batch, typ netlink.HeaderType) []netlink.Message {
	msgs := make([]netlink.Message, len(b.reqs))
	buf := make([]byte, 0, 128*len(b.reqs))
	for i := range b.reqs {
		start := len(buf)
		buf = appendOpRequest(buf, b.op(&b.reqs[i]))
		msgs[i] = netlink.Message{Header: netlink.Header{Type: typ}, Data: buf[start:len(buf):len(buf)]}
	}
	return msgs
}
