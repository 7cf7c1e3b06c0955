package dummy

import (
	"net/netip"
	"testing"
)

// A request made by routeMessage decodes, as the kernel's report of the
// route would, to one of ours on that link and no other.
func TestRouteMessageRoundTrip(t *testing.T) {
	for _, s := range []string{"198.18.0.1", "2001:db8::1"} {
		a := netip.MustParseAddr(s)
		r, ok := parseRoute(routeMessage(7, a))
		if !ok {
			t.Fatalf("%s: the request does not decode", s)
		}
		want := route{dst: netip.PrefixFrom(a, a.BitLen()), table: rtTableLocal, protocol: RouteProtocol, scope: rtScopeHost, typ: rtnLocal, oif: 7}
		if r != want {
			t.Fatalf("%s: decoded %+v, want %+v", s, r, want)
		}
		if !r.ours(7) || r.ours(8) {
			t.Fatalf("%s: ours(7) = %v, ours(8) = %v", s, r.ours(7), r.ours(8))
		}
		for _, mod := range []func(*route){
			func(r *route) { r.protocol = 4 },
			func(r *route) { r.typ = 1 },
			func(r *route) { r.table = 254 },
			func(r *route) { r.dst = netip.PrefixFrom(a, 24) },
		} {
			x := r
			mod(&x)
			if x.ours(7) {
				t.Errorf("%s: %+v counts as ours", s, x)
			}
		}
	}
}

// Malformed messages are refused, never a panic.
func FuzzParseRoute(f *testing.F) {
	f.Add(routeMessage(1, netip.MustParseAddr("198.18.0.1")))
	f.Add(routeMessage(1, netip.MustParseAddr("2001:db8::1")))
	f.Add([]byte{2, 32, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, ok := parseRoute(b); ok && r.dst.IsValid() && r.dst.Bits() > r.dst.Addr().BitLen() {
			t.Fatalf("impossible prefix %v", r.dst)
		}
	})
}
