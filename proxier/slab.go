package proxier

import (
	"net/netip"

	"github.com/ipvskit/ipvskit/ipvs"
)

// slabBlock is how many values a slab allocates at a time.
const slabBlock = 1024

// slab hands out slices of T cut from blocks it allocates slabBlock values
// at a time. A build of 10,000s of services makes several small slices a
// service (its copy's fields, its virtual servers' destinations) that live
// as long as the served State: cut from blocks, they are a few hundred
// objects for the collector instead of 10,000s. The price is that a block
// stays allocated while any slice of it is in use, so at most the first
// sync's copies outlive the services an Update replaces.
type slab[T any] struct{ block []T }

// take returns a zeroed slice of n values (len and cap n), or nil for 0.
func (s *slab[T]) take(n int) []T {
	if n == 0 {
		return nil
	}
	if n > len(s.block) {
		if n > slabBlock/4 {
			return make([]T, n) // large: a block of its own would waste the rest
		}
		s.block = make([]T, slabBlock)
	}
	out := s.block[:n:n]
	s.block = s.block[n:]
	return out
}

// clone returns a copy of x from the slab: nil for a nil x, an empty slice
// for an empty one.
func (s *slab[T]) clone(x []T) []T {
	if len(x) == 0 {
		return x[:0:0]
	}
	out := s.take(len(x))
	copy(out, x)
	return out
}

// arena is the slabs of one build: what the copies of its services, its
// virtual servers and their destinations are cut from. Only one goroutine
// uses an arena. A nil arena allocates each value apart.
type arena struct {
	services  slab[Service]
	servers   slab[virtualServer]
	dests     slab[ipvs.Destination]
	addrs     slab[netip.Addr]
	families  slab[Family]
	ports     slab[Port]
	prefixes  slab[netip.Prefix]
	endpoints slab[Endpoint]
}

// service returns a new Service from the arena.
func (a *arena) service() *Service {
	if a == nil {
		return new(Service)
	}
	return &a.services.take(1)[0]
}

// server returns a new virtualServer from the arena.
func (a *arena) server() *virtualServer {
	if a == nil {
		return new(virtualServer)
	}
	return &a.servers.take(1)[0]
}

// destinations returns an empty slice with room for n destinations.
func (a *arena) destinations(n int) []ipvs.Destination {
	if a == nil {
		return make([]ipvs.Destination, 0, n)
	}
	return a.dests.take(n)[:0]
}
