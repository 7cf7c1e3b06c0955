package ipvs

import "net/netip"

// This file holds a Batch's compact form. A plan of 50,000 services x 10
// destinations is 550,000 requests: stored as Op values (a whole Service
// beside each Destination, 168 bytes) they took 92 MB, all of it scanned by
// the collector until the batch was applied. Here a request is 48 bytes
// without pointers, and refers to its service by index into Batch.svcs,
// one entry per run of requests for the same service; Op values are made
// again, on the stack, as they are read (Batch.At, Batch.All).

// request is one request of a Batch: its kind, its service (index into
// Batch.svcs) and, for destination requests, the destination with its
// address as bytes. Destinations of a valid request have no zone and no
// IPv4-mapped form (validateAddr), so the bytes and their length give the
// same netip.Addr back.
type request struct {
	addr     [16]byte
	weight   uint32
	upper    uint32
	lower    uint32
	forward  ForwardMethod
	svc      uint32
	port     uint16
	tunPort  uint16
	tunFlags TunnelFlags
	kind     OpKind
	addrLen  uint8 // 0 (no address), 4 or 16
	family   Family
	tunType  TunnelType
}

func packDest(r *request, d Destination) {
	switch {
	case d.Addr.Is4():
		a := d.Addr.As4()
		copy(r.addr[:], a[:])
		r.addrLen = 4
	case d.Addr.IsValid():
		r.addr = d.Addr.As16()
		r.addrLen = 16
	}
	r.port, r.family, r.forward = d.Port, d.Family, d.Forward
	r.weight, r.upper, r.lower = d.Weight, d.UpperThreshold, d.LowerThreshold
	r.tunType, r.tunPort, r.tunFlags = d.TunnelType, d.TunnelPort, d.TunnelFlags
}

func (r *request) dest() Destination {
	var a netip.Addr
	switch r.addrLen {
	case 4:
		a = netip.AddrFrom4([4]byte(r.addr[:4]))
	case 16:
		a = netip.AddrFrom16(r.addr)
	}
	return Destination{
		Addr: a, Port: r.port, Family: r.family, Forward: r.forward,
		Weight: r.weight, UpperThreshold: r.upper, LowerThreshold: r.lower,
		TunnelType: r.tunType, TunnelPort: r.tunPort, TunnelFlags: r.tunFlags,
	}
}

// fullService says whether requests of kind k carry a whole Service; the
// others carry only its identity fields (keyService).
func fullService(k OpKind) bool { return k == OpAddService || k == OpUpdateService }

// identity is the ServiceKey fields of s as they are, not normalised.
func identity(s Service) ServiceKey {
	return ServiceKey{Family: s.Family, Protocol: s.Protocol, Addr: s.Addr, Port: s.Port, FWMark: s.FWMark}
}

// store appends op, known to be valid, to b, sharing the last entry of
// b.svcs when op is for the same service: the same Service for a full one,
// the same identity fields for the others.
func (b *Batch) store(op Op) {
	r := request{kind: op.Kind}
	if op.Kind >= OpAddDestination {
		packDest(&r, op.Destination)
	}
	last := b.svcs.last()
	switch {
	case last == nil:
		b.svcs.add(op.Service)
	case fullService(op.Kind) && *last == op.Service:
	case !fullService(op.Kind) && identity(*last) == identity(op.Service):
	default:
		b.svcs.add(op.Service)
	}
	r.svc = uint32(b.svcs.n - 1)
	b.reqs = append(b.reqs, r)
}

// op makes the Op of request r again, as it was added.
func (b *Batch) op(r *request) Op {
	op := Op{Kind: r.kind, Service: *b.svcs.at(r.svc)}
	if !fullService(r.kind) {
		op.Service = keyService(identity(op.Service))
	}
	if r.kind >= OpAddDestination {
		op.Destination = r.dest()
	}
	return op
}

// svcChunk is the number of services in each chunk of a serviceTable.
const svcChunk = 256

// serviceTable is a Batch's services, by index, in chunks of svcChunk: a
// batch does not know how many services its requests will name, and a flat
// slice grown by append (by a quarter at a time once large) would allocate
// about five times its final size on the way.
type serviceTable struct {
	chunks [][]Service
	n      int
}

func (t *serviceTable) add(s Service) {
	c := len(t.chunks) - 1
	if c < 0 || len(t.chunks[c]) == svcChunk {
		size := 1
		if c >= 0 {
			size = svcChunk
		}
		t.chunks = append(t.chunks, make([]Service, 0, size))
		c++
	}
	ch := t.chunks[c]
	if len(ch) == cap(ch) { // the first chunk, doubling up to svcChunk
		ch = append(make([]Service, 0, min(2*cap(ch), svcChunk)), ch...)
	}
	t.chunks[c] = append(ch, s)
	t.n++
}

func (t *serviceTable) at(i uint32) *Service { return &t.chunks[i/svcChunk][i%svcChunk] }

// last is the latest service added, or nil.
func (t *serviceTable) last() *Service {
	if t.n == 0 {
		return nil
	}
	return t.at(uint32(t.n - 1))
}
