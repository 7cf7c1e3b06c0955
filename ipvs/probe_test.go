package ipvs

import (
	"encoding/binary"
	"testing"
)

// The scheduler probe must be a NEW_SERVICE the kernel cannot accept: an
// IPv6 fwmark service with every attribute a full service needs and a
// prefix length (netmask) of 0.
func TestSchedulerProbeRequestIsAnInvalidIPv6Service(t *testing.T) {
	b := schedulerProbeRequest("sh", 77)
	if b[0] != cmdNewService {
		t.Fatalf("command %d, want NEW_SERVICE", b[0])
	}
	attrs := map[uint16][]byte{}
	nest := b[4:]
	// one nested attribute, IPVS_CMD_ATTR_SERVICE
	if typ := binary.NativeEndian.Uint16(nest[2:]) &^ 0x8000; typ != cmdAttrService {
		t.Fatalf("outer attribute %d, want IPVS_CMD_ATTR_SERVICE", typ)
	}
	inner := nest[4:binary.NativeEndian.Uint16(nest)]
	for len(inner) >= 4 {
		l := int(binary.NativeEndian.Uint16(inner))
		attrs[binary.NativeEndian.Uint16(inner[2:])] = inner[4:l]
		inner = inner[(l+3)&^3:]
	}
	if af := binary.NativeEndian.Uint16(attrs[svcAttrAF]); af != uint16(IPv6) {
		t.Errorf("family %d, want AF_INET6", af)
	}
	if m := binary.NativeEndian.Uint32(attrs[svcAttrFWMark]); m != 77 {
		t.Errorf("fwmark %d, want 77", m)
	}
	if s := string(attrs[svcAttrSchedName]); s != "sh\x00" {
		t.Errorf("scheduler %q", s)
	}
	for _, a := range []uint16{svcAttrFlags, svcAttrTimeout} {
		if _, ok := attrs[a]; !ok {
			t.Errorf("attribute %d missing: the kernel would refuse it before the scheduler lookup", a)
		}
	}
	if nm, ok := attrs[svcAttrNetmask]; !ok || binary.NativeEndian.Uint32(nm) != 0 {
		t.Errorf("netmask %v, want present and 0", nm)
	}
}
