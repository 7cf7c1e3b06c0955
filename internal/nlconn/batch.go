package nlconn

import "encoding/binary"

// batchLimits returns how many requests and bytes one send may carry: at most
// want (default DefaultBatchMessages) requests, no more than the receive
// buffer has room to report failures for, and no more bytes than the kernel
// accepts in one sendmsg (sk_sndbuf - 32, net/netlink/af_netlink.c netlink_sendmsg).
func batchLimits(want, rcvbuf, sndbuf int) (maxMsgs, maxBytes int) {
	if want <= 0 {
		want = DefaultBatchMessages
	}
	maxMsgs = min(want, max(1, rcvbuf/failureCost))
	maxBytes = max(headerLen, sndbuf-32)
	return maxMsgs, maxBytes
}

// setAck sets NLM_F_ACK in the header at the start of b.
func setAck(b []byte) {
	f := binary.NativeEndian.Uint16(b[6:8])
	binary.NativeEndian.PutUint16(b[6:8], f|flagAck)
}
