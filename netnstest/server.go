package netnstest

import (
	"net/netip"
	"slices"
	"sync"
)

// Server is a backend that ServeTCP or ServeUDP started: it answers every
// connection or datagram with its reply, and records who asked.
type Server struct {
	mu    sync.Mutex
	peers []netip.AddrPort
}

// Peers returns the source address of every connection or datagram the
// server answered so far, in order: what a backend sees of its clients
// (the client's own address, or the node's after masquerading).
func (s *Server) Peers() []netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.peers)
}
