package proxier

import (
	"testing"

	"github.com/ipvskit/ipvskit/inet"
)

// The State's protocols are inet's, so they go to the kernel packages as
// they are; the files' names (upper case, read in any case) convert one to
// one, and a name the State does not have converts to nothing.
func TestProtocolNames(t *testing.T) {
	for _, c := range []struct {
		p          Protocol
		n          inet.Protocol
		name, text string
	}{{TCP, inet.TCP, "TCP", "tcp"}, {UDP, inet.UDP, "UDP", "udp"}, {SCTP, inet.SCTP, "SCTP", "sctp"}} {
		if c.p != c.n || protocolName(c.p) != c.name || protocolNamed(c.name) != c.p || protocolNamed(c.text) != c.p || c.p.String() != c.text {
			t.Errorf("%s: = %v, protocolName = %q, protocolNamed(%q) = %v, String() = %q", c.name, c.n, protocolName(c.p), c.text, protocolNamed(c.text), c.p.String())
		}
	}
	if p := protocolNamed("icmp"); p != 0 {
		t.Errorf(`protocolNamed("icmp") = %v, want 0`, p)
	}
	if s := protocolName(inet.ICMP); s != "icmp" {
		t.Errorf("protocolName(icmp) = %q, want \"icmp\"", s)
	}
}
