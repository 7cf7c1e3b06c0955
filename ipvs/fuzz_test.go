package ipvs

import (
	"net/netip"
	"testing"
	"time"
)

// Every decoder takes whatever the kernel (or a fuzzer) sends without
// panicking.

func FuzzDecodeService(f *testing.F) {
	f.Add(serviceRequest(cmdNewService, roundTripCases[1].svc, true))
	f.Add(kernelService(2, attr(svcAttrFWMark, u32(1)...)))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeService(b) })
}

func FuzzDecodeDest(f *testing.F) {
	f.Add(destRequest(cmdNewDest, roundTripCases[0].svc.Key(), roundTripCases[1].dests[0], true), uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, fam uint8) { _, _ = decodeDest(b, Family(fam)) })
}

func FuzzDecodeDaemon(f *testing.F) {
	f.Add(daemonRequest(Daemon{State: Master, Interface: "eth0", Group: mustAddr("ff02::1")}))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeDaemon(b) })
}

func FuzzDecodeTimeoutsAndInfo(f *testing.F) {
	f.Add(setConfigRequest(Timeouts{TCP: time.Second, TCPFin: 2 * time.Second, UDP: 3 * time.Second}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeTimeouts(b)
		_, _ = decodeInfo(b)
	})
}

// FuzzServiceRoundTrip: any service the validator accepts encodes to
// attributes that decode back to the same service.
func FuzzServiceRoundTrip(f *testing.F) {
	f.Add(uint16(6), []byte{198, 18, 0, 1}, uint16(80), uint32(0), uint8(2), "rr", uint32(8), true, uint32(300), uint8(24), "")
	f.Add(uint16(0), []byte{}, uint16(0), uint32(7), uint8(10), "mh", uint32(16), false, uint32(0), uint8(0), "sip")
	f.Fuzz(func(t *testing.T, proto uint16, addr []byte, port uint16, mark uint32, fam uint8, sched string, flags uint32, onePacket bool, timeout uint32, plen uint8, pe string) {
		s := Service{Protocol: Protocol(proto), Port: port, FWMark: mark, Family: Family(fam), Scheduler: sched,
			SchedFlags: SchedFlags(flags), OnePacket: onePacket, PersistenceEngine: pe,
			Persistence: Persistence{Timeout: time.Duration(timeout) * time.Second, PrefixLen: plen}}
		s.Addr, _ = netip.AddrFromSlice(addr)
		if validateService(s) != nil {
			return
		}
		si, err := decodeService(serviceRequest(cmdNewService, s, true))
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		want := withFamily(s)
		if int(want.Persistence.PrefixLen) == want.Family.Bits() {
			want.Persistence.PrefixLen = 0 // the full length reads back as 0
		}
		if si.Service != want {
			t.Fatalf("round trip:\n got %+v\nwant %+v", si.Service, want)
		}
	})
}

// FuzzDestRoundTrip: the same for destinations.
func FuzzDestRoundTrip(f *testing.F) {
	f.Add([]byte{198, 18, 1, 1}, uint16(80), uint8(0), uint32(2), uint32(1), uint32(10), uint32(5), uint8(1), uint16(6080), uint16(1))
	f.Fuzz(func(t *testing.T, addr []byte, port uint16, fam uint8, fwd, weight, upper, lower uint32, tt uint8, tport, tflags uint16) {
		d := Destination{Port: port, Family: Family(fam), Forward: ForwardMethod(fwd), Weight: weight,
			UpperThreshold: upper, LowerThreshold: lower, TunnelType: TunnelType(tt), TunnelPort: tport, TunnelFlags: TunnelFlags(tflags)}
		d.Addr, _ = netip.AddrFromSlice(addr)
		k := ServiceKey{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80}
		if d.Addr.Is6() {
			k.Addr = mustAddr("2001:db8::1")
		}
		if validateDest(k, d) != nil {
			return
		}
		di, err := decodeDest(destRequest(cmdNewDest, k, d, true), k.normal().Family)
		if err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
		want := d
		want.Family = d.family()
		if di.Destination != want {
			t.Fatalf("round trip:\n got %+v\nwant %+v", di.Destination, want)
		}
	})
}
