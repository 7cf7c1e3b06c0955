package nlconn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"

	"github.com/ipvskit/ipvskit/internal/nlattr"
)

// Sizes and flags of the netlink wire format (include/uapi/linux/netlink.h).
const (
	headerLen = 16 // sizeof(struct nlmsghdr)

	nlmsgError = 0x2 // NLMSG_ERROR
	nlmsgDone  = 0x3 // NLMSG_DONE

	flagMulti    = 0x2   // NLM_F_MULTI
	flagAck      = 0x4   // NLM_F_ACK
	flagAckTLVs  = 0x200 // NLM_F_ACK_TLVS (on an NLMSG_ERROR)
	flagDumpIntr = 0x10  // NLM_F_DUMP_INTR

	attrMsg  = 1 // NLMSGERR_ATTR_MSG
	attrOffs = 2 // NLMSGERR_ATTR_OFFS
)

var errShort = errors.New("short netlink message")

func align4(n int) int { return (n + 3) &^ 3 }

// appendMessage appends the wire form of one message (header and data,
// padded to 4 bytes) to b.
func appendMessage(b []byte, typ netlink.HeaderType, flags netlink.HeaderFlags, seq, pid uint32, data []byte) []byte {
	n := headerLen + len(data)
	ne := binary.NativeEndian
	b = ne.AppendUint32(b, uint32(n))
	b = ne.AppendUint16(b, uint16(typ))
	b = ne.AppendUint16(b, uint16(flags))
	b = ne.AppendUint32(b, seq)
	b = ne.AppendUint32(b, pid)
	b = append(b, data...)
	for i := n; i < align4(n); i++ {
		b = append(b, 0)
	}
	return b
}

// wireSize is the number of bytes appendMessage writes for data.
func wireSize(data []byte) int { return align4(headerLen + len(data)) }

// nextMessage splits the first message off b. It returns the header, the
// message's data (aliasing b) and the rest of b.
func nextMessage(b []byte) (netlink.Header, []byte, []byte, error) {
	if len(b) < headerLen {
		return netlink.Header{}, nil, nil, fmt.Errorf("%w: %d bytes left", errShort, len(b))
	}
	ne := binary.NativeEndian
	h := netlink.Header{
		Length:   ne.Uint32(b[0:4]),
		Type:     netlink.HeaderType(ne.Uint16(b[4:6])),
		Flags:    netlink.HeaderFlags(ne.Uint16(b[6:8])),
		Sequence: ne.Uint32(b[8:12]),
		PID:      ne.Uint32(b[12:16]),
	}
	if h.Length < headerLen || int(h.Length) > len(b) {
		return h, nil, nil, fmt.Errorf("%w: length %d, %d bytes left", errShort, h.Length, len(b))
	}
	data := b[headerLen:h.Length]
	next := align4(int(h.Length))
	if next > len(b) {
		next = len(b)
	}
	return h, data, b[next:], nil
}

// parseError decodes the payload of an NLMSG_ERROR or NLMSG_DONE message. It
// returns nil for an ack (error 0), an *Error otherwise.
func parseError(h netlink.Header, data []byte) (*Error, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: error code", errShort)
	}
	code := int32(binary.NativeEndian.Uint32(data[:4]))
	if code == 0 {
		return nil, nil
	}
	if code > 0 {
		code = -code // NLMSG_DONE of some families carries a positive value
	}
	e := &Error{Errno: syscall.Errno(-code), Sequence: h.Sequence}
	if h.Type != nlmsgError || h.Flags&flagAckTLVs == 0 {
		return e, nil
	}
	// The TLVs follow the echoed request: only its header when the kernel
	// capped it (NLM_F_CAPPED), else the whole request.
	rest := data[4:]
	if len(rest) < headerLen {
		return e, nil
	}
	echoed := int(binary.NativeEndian.Uint32(rest[0:4]))
	skip := headerLen
	if h.Flags&0x100 == 0 { // not NLM_F_CAPPED
		skip = align4(echoed)
	}
	if skip > len(rest) || skip < headerLen {
		return e, nil
	}
	ad := nlattr.NewDecoder(rest[skip:])
	var (
		msg  string
		offs int
	)
	for ad.Next() {
		switch ad.Type() {
		case attrMsg:
			msg = ad.String()
		case attrOffs:
			offs = int(ad.Uint32())
		}
	}
	if ad.Err() == nil { // a malformed ext-ack never hides the errno
		e.Message, e.Offset = msg, offs
	}
	return e, nil
}
