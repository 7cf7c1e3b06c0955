package ipvs

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestBatchCompactOps checks that a Batch gives back each request as it was
// added (Ops, All, At), whether or not it shares its service with the
// requests before it, and encodes each as the request of that Op.
func TestBatchCompactOps(t *testing.T) {
	full := Service{Protocol: TCP, Addr: netip.MustParseAddr("198.18.0.1"), Port: 80, Scheduler: "rr",
		Persistence: Persistence{Timeout: time.Minute, PrefixLen: 24}}
	bare := keyService(identity(full)) // its identity only, as destination requests carry it
	other := full                      // the same service, configured otherwise
	other.Scheduler, other.Persistence = "wlc", Persistence{}
	k := identity(full) // Family left zero, as a caller may
	kn := full.Key()    // Family set: another identity, its own entry
	k6 := ServiceKey{Family: IPv6, Protocol: UDP, Addr: netip.MustParseAddr("2001:db8::1"), Port: 53}
	svc6 := Service{Family: IPv6, Protocol: UDP, Addr: k6.Addr, Port: 53, Scheduler: "sh"}
	fwm := ServiceKey{Family: IPv4, FWMark: 7}
	d4 := Destination{Addr: netip.MustParseAddr("10.0.0.1"), Port: 8080, Weight: 3, UpperThreshold: 9, LowerThreshold: 2}
	d6 := Destination{Addr: netip.MustParseAddr("2001:db8::2"), Port: 53, Family: IPv6, Forward: DirectRoute, Weight: 1}
	tun := Destination{Addr: netip.MustParseAddr("2001:db8::3"), Forward: Tunnel, TunnelType: GUE, TunnelPort: 6080, TunnelFlags: TunnelCsum}
	want := []Op{
		{Kind: OpAddService, Service: full},
		{Kind: OpAddDestination, Service: bare, Destination: d4},
		{Kind: OpUpdateDestination, Service: bare, Destination: d4},
		{Kind: OpAddDestination, Service: keyService(kn), Destination: d4},
		{Kind: OpUpdateService, Service: full},
		{Kind: OpAddService, Service: other},
		{Kind: OpDeleteDestination, Service: bare, Destination: Destination{Addr: d4.Addr, Port: d4.Port}},
		{Kind: OpAddService, Service: svc6},
		{Kind: OpAddDestination, Service: keyService(k6), Destination: d6},
		{Kind: OpAddDestination, Service: keyService(fwm), Destination: Destination{Addr: d4.Addr, Forward: DirectRoute}},
		{Kind: OpAddDestination, Service: keyService(fwm), Destination: tun},
		{Kind: OpDeleteService, Service: keyService(k6)},
		{Kind: OpDeleteService, Service: bare},
	}
	var b Batch
	b.AddService(full)
	b.AddDestination(k, d4)
	b.UpdateDestination(k, d4)
	b.AddDestination(kn, d4)
	b.UpdateService(full)
	b.AddService(other)
	b.DeleteDestination(k, d4.Key())
	b.AddService(svc6)
	b.AddDestination(k6, d6)
	b.AddDestination(fwm, Destination{Addr: d4.Addr, Forward: DirectRoute})
	b.AddDestination(fwm, tun)
	b.DeleteService(k6)
	b.DeleteService(k)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if got := b.Ops(); !slices.Equal(got, want) {
		t.Fatalf("Ops:\n got %+v\nwant %+v", got, want)
	}
	if b.svcs.n != 8 {
		t.Errorf("%d services stored for %d requests, want 8 (one per run)", b.svcs.n, b.Len())
	}
	msgs := batchMessages(&b, 0x20)
	for i, op := range b.All() {
		if op != want[i] || b.At(i) != want[i] {
			t.Errorf("request %d: All %+v, At %+v, want %+v", i, op, b.At(i), want[i])
		}
		if w := opRequest(want[i]); !bytes.Equal(msgs[i].Data, w) || msgs[i].Header.Type != 0x20 {
			t.Errorf("request %d encoded as\n%x\nwant\n%x", i, msgs[i].Data, w)
		}
	}
	var empty Batch
	if empty.Ops() != nil || len(batchMessages(&empty, 1)) != 0 {
		t.Error("an empty batch has requests")
	}
}

// TestBatchManyServices crosses the chunks of the service table and of the
// encoding buffers: every request comes back and encodes as it was added.
func TestBatchManyServices(t *testing.T) {
	var b Batch
	benchBatch(&b, 700, 3)
	if b.Len() != 700*4 || b.svcs.n != 700 {
		t.Fatalf("%d requests, %d services stored", b.Len(), b.svcs.n)
	}
	msgs := batchMessages(&b, 0x20)
	size := 0
	for i, op := range b.All() {
		s, d := i/4, i%4
		want := Op{Kind: OpAddService, Service: benchService(s)}
		if d > 0 {
			want = Op{Kind: OpAddDestination, Service: keyService(benchService(s).Key()), Destination: benchDest(s, d-1)}
		}
		if op != want {
			t.Fatalf("request %d: %+v, want %+v", i, op, want)
		}
		if w := opRequest(want); !bytes.Equal(msgs[i].Data, w) {
			t.Fatalf("request %d encoded as\n%x\nwant\n%x", i, msgs[i].Data, w)
		}
		size += len(msgs[i].Data)
	}
	if size <= bufChunk {
		t.Errorf("%d bytes encoded: one buffer", size)
	}
}

func benchService(s int) Service {
	return Service{Family: IPv4, Protocol: TCP, Addr: netip.AddrFrom4([4]byte{10, 96, byte(s >> 8), byte(s)}), Port: 80, Scheduler: "rr"}
}

func benchDest(s, d int) Destination {
	return Destination{Addr: netip.AddrFrom4([4]byte{10, 200 + byte(d), byte(s >> 8), byte(s)}), Port: 8080, Weight: 1}
}

// benchBatch fills b with services x dests requests, as a first sync plans
// them: each service, then its destinations.
func benchBatch(b *Batch, services, dests int) {
	b.Grow(services * (dests + 1))
	for s := range services {
		svc := benchService(s)
		b.AddService(svc)
		k := svc.Key()
		for d := range dests {
			b.AddDestination(k, benchDest(s, d))
		}
	}
}

// BenchmarkBatch builds a batch of services x 10 destinations and encodes
// it as Apply does (issue 28: the plan's batch at 50,000 services).
func BenchmarkBatch(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		b.Run(fmt.Sprintf("services=%d/build", n), func(b *testing.B) {
			for b.Loop() {
				var bt Batch
				benchBatch(&bt, n, 10)
			}
		})
		b.Run(fmt.Sprintf("services=%d/build+encode", n), func(b *testing.B) {
			for b.Loop() {
				var bt Batch
				benchBatch(&bt, n, 10)
				if len(batchMessages(&bt, 0x20)) != n*11 {
					b.Fatal("short")
				}
			}
		})
	}
}

// TestBatchAppend checks that a batch collected in two parts and appended
// gives back the requests of one collected whole, across the chunks of the
// service table, and that the first invalid request of the parts is kept.
func TestBatchAppend(t *testing.T) {
	var whole, first, second Batch
	benchBatch(&whole, 700, 3)
	benchBatch(&first, 300, 3)
	for s := 300; s < 700; s++ {
		second.AddService(benchService(s))
		for d := range 3 {
			second.AddDestination(benchService(s).Key(), benchDest(s, d))
		}
	}
	n := second.Len()
	first.Append(&second)
	if !slices.Equal(first.Ops(), whole.Ops()) {
		t.Fatal("appended parts differ from the whole batch")
	}
	if second.Len() != n || second.At(0) != whole.At(300*4) {
		t.Error("Append changed the batch appended")
	}
	if first.Err() != nil {
		t.Fatal(first.Err())
	}
	var bad Batch
	bad.AddService(Service{Protocol: TCP, Addr: netip.MustParseAddr("198.18.0.1"), Port: 0})
	first.Append(&bad)
	if first.Err() == nil || first.Err() != bad.Err() {
		t.Errorf("Err after appending an invalid batch: %v, want %v", first.Err(), bad.Err())
	}
	var good Batch
	good.AddService(benchService(1))
	first.Append(&good)
	if first.Err() != bad.Err() {
		t.Error("appending a valid batch replaced the first invalid request")
	}
}
