package nlconn

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"
)

func TestAppendAndSplitMessages(t *testing.T) {
	var b []byte
	b = appendMessage(b, 0x10, netlink.Request|netlink.Acknowledge, 7, 42, []byte{1, 2, 3})
	b = appendMessage(b, 0x11, netlink.Request, 8, 42, nil)
	if len(b) != 20+16 {
		t.Fatalf("wire length = %d, want 36 (16+3 padded to 20, then 16)", len(b))
	}
	if got := wireSize([]byte{1, 2, 3}); got != 20 {
		t.Fatalf("wireSize = %d, want 20", got)
	}
	h, data, rest, err := nextMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	want := netlink.Header{Length: 19, Type: 0x10, Flags: netlink.Request | netlink.Acknowledge, Sequence: 7, PID: 42}
	if h != want || string(data) != "\x01\x02\x03" {
		t.Fatalf("first message = %+v %v, want %+v [1 2 3]", h, data, want)
	}
	h, data, rest, err = nextMessage(rest)
	if err != nil || h.Sequence != 8 || len(data) != 0 || len(rest) != 0 {
		t.Fatalf("second message = %+v %v rest %d err %v", h, data, len(rest), err)
	}
	if _, _, _, err := nextMessage([]byte{20, 0, 0, 0}); !errors.Is(err, errShort) {
		t.Fatalf("short buffer: err = %v, want errShort", err)
	}
	bad := appendMessage(nil, 1, 0, 1, 1, nil)
	binary.NativeEndian.PutUint32(bad, 100) // claims more than there is
	if _, _, _, err := nextMessage(bad); !errors.Is(err, errShort) {
		t.Fatalf("overlong length: err = %v, want errShort", err)
	}
}

func TestSetAck(t *testing.T) {
	b := appendMessage(nil, 1, netlink.Request, 1, 1, nil)
	setAck(b)
	h, _, _, _ := nextMessage(b)
	if h.Flags != netlink.Request|netlink.Acknowledge {
		t.Fatalf("flags = %v, want request|ack", h.Flags)
	}
}

// errorMessage builds an NLMSG_ERROR payload as the kernel does with
// NETLINK_CAP_ACK and extended acks: errno, the echoed request header, then
// the TLVs.
func errorPayload(errno int32, capped bool, echoedData []byte, msg string, offs uint32) (netlink.HeaderFlags, []byte) {
	var p []byte
	p = binary.NativeEndian.AppendUint32(p, uint32(errno))
	p = appendMessage(p, 0x10, netlink.Request, 5, 9, echoedData)
	flags := netlink.HeaderFlags(0)
	if capped {
		p = p[:4+headerLen]
		flags |= 0x100
	}
	if msg != "" {
		ae := netlink.NewAttributeEncoder()
		ae.String(attrMsg, msg)
		ae.Uint32(attrOffs, offs)
		tlv, _ := ae.Encode()
		p = append(p, tlv...)
		flags |= flagAckTLVs
	}
	return flags, p
}

func TestParseError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		errno   int32
		capped  bool
		echoed  []byte
		msg     string
		offs    uint32
		wantNil bool
		is      error
	}{
		{name: "ack", errno: 0, capped: true, wantNil: true},
		{name: "exist capped with message", errno: -17, capped: true, msg: "already there", offs: 20, is: fs.ErrExist},
		{name: "not exist uncapped with message", errno: -2, echoed: []byte{1, 2, 3, 4, 5}, msg: "no such thing", offs: 24, is: fs.ErrNotExist},
		{name: "einval without ext ack", errno: -22, capped: true, is: syscall.EINVAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags, p := errorPayload(tc.errno, tc.capped, tc.echoed, tc.msg, tc.offs)
			e, err := parseError(netlink.Header{Type: nlmsgError, Flags: flags, Sequence: 5}, p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantNil {
				if e != nil {
					t.Fatalf("ack decoded as error %v", e)
				}
				return
			}
			if e == nil || !errors.Is(e, tc.is) || e.Errno != syscall.Errno(-tc.errno) {
				t.Fatalf("got %v, want errno %d (errors.Is %v)", e, -tc.errno, tc.is)
			}
			if e.Message != tc.msg || e.Offset != int(tc.offs) || e.Sequence != 5 {
				t.Fatalf("got message %q offset %d seq %d, want %q %d 5", e.Message, e.Offset, e.Sequence, tc.msg, tc.offs)
			}
		})
	}
	if _, err := parseError(netlink.Header{Type: nlmsgError}, []byte{1, 2}); !errors.Is(err, errShort) {
		t.Fatalf("2-byte payload: err = %v, want errShort", err)
	}
}

func TestBatchLimits(t *testing.T) {
	for _, tc := range []struct{ want, rcv, snd, msgs, bytes int }{
		{0, 16 << 20, 16 << 20, DefaultBatchMessages, 16<<20 - 32},
		{10, 16 << 20, 1 << 20, 10, 1<<20 - 32},
		{0, 425984, 425984, 425984 / failureCost, 425984 - 32}, // unprivileged default rmem_max, doubled
		{0, 100, 10, 1, headerLen},
	} {
		m, b := batchLimits(tc.want, tc.rcv, tc.snd)
		if m != tc.msgs || b != tc.bytes {
			t.Errorf("batchLimits(%d, %d, %d) = %d, %d; want %d, %d", tc.want, tc.rcv, tc.snd, m, b, tc.msgs, tc.bytes)
		}
	}
}

func FuzzParseReplies(f *testing.F) {
	flags, p := errorPayload(-17, false, []byte{1, 2, 3}, "x", 4)
	f.Add(appendMessage(nil, nlmsgError, flags, 1, 1, p))
	f.Add(appendMessage(nil, nlmsgDone, netlink.Multi, 1, 1, []byte{0, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			h, data, rest, err := nextMessage(b)
			if err != nil {
				return
			}
			if len(rest) >= len(b) {
				t.Fatalf("no progress: %d -> %d", len(b), len(rest))
			}
			b = rest
			_, _ = parseError(h, data)
		}
	})
}
