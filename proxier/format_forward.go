package proxier

import (
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier/internal/statefile"
)

// tunnelOf is a decoded tunnel, whose words the decoder has checked and
// put in lower case.
func tunnelOf(t *statefile.Tunnel) Tunnel {
	out := Tunnel{Port: t.Port}
	for _, tt := range []TunnelType{ipvs.IPIP, ipvs.GUE, ipvs.GRE} {
		if t.Type == tt.String() {
			out.Type = tt
		}
	}
	for _, f := range []TunnelFlags{ipvs.TunnelCsum, ipvs.TunnelRemCsum} {
		if t.Checksum == f.String() {
			out.Flags = f
		}
	}
	return out
}

// tunnelText is t in the text form's words; nil for the zero Tunnel (an
// ipip tunnel, or none), which the form leaves out. A type or checksum
// the form has no word for is written as its String, which the decoder
// refuses.
func tunnelText(t Tunnel) *statefile.Tunnel {
	if t == (Tunnel{}) {
		return nil
	}
	out := &statefile.Tunnel{Type: t.Type.String(), Port: t.Port}
	if t.Flags != ipvs.TunnelNoCsum {
		out.Checksum = t.Flags.String()
	}
	return out
}
