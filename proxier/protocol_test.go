package proxier

import (
	"testing"

	"github.com/ipvskit/ipvskit/inet"
)

// The State's protocol names and the kernel packages' numbers convert one
// to one, and a name the State does not have converts to nothing.
func TestProtocolConversion(t *testing.T) {
	for _, c := range []struct {
		p    Protocol
		n    inet.Protocol
		text string
	}{{TCP, inet.TCP, "tcp"}, {UDP, inet.UDP, "udp"}, {SCTP, inet.SCTP, "sctp"}} {
		if c.p.Inet() != c.n || ProtocolOf(c.n) != c.p || c.n.String() != c.text {
			t.Errorf("%s: Inet() = %v, ProtocolOf(%v) = %q, String() = %q", c.p, c.p.Inet(), c.n, ProtocolOf(c.n), c.n.String())
		}
	}
	if n := Protocol("tcp").Inet(); n != 0 {
		t.Errorf(`Protocol("tcp").Inet() = %v, want 0 (the State's names are upper case; validation refuses it)`, n)
	}
	if p := ProtocolOf(inet.ICMP); p != "" {
		t.Errorf("ProtocolOf(icmp) = %q, want \"\"", p)
	}
}
