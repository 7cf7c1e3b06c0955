package proxier

import "github.com/ipvskit/ipvskit/ipvs"

// Weights and thresholds: what an Endpoint asks of its destinations beside
// their address and port. A State without them (every Endpoint's Weight,
// Quiesced and thresholds zero) gives every destination weight 1 and no
// thresholds, as before they existed.

// destWeight is the weight e's destinations get: 0 when quiesced, 1 for
// the zero Weight, else Weight. e is valid.
func destWeight(e *Endpoint) uint32 {
	switch {
	case e.Quiesced:
		return 0
	case e.Weight == 0:
		return 1
	}
	return uint32(e.Weight)
}

// withEndpointKnobs sets on d what e says of it beside its address and
// port: its weight and thresholds. e is valid.
func withEndpointKnobs(d ipvs.Destination, e *Endpoint) ipvs.Destination {
	d.Weight = destWeight(e)
	d.UpperThreshold = uint32(e.UpperThreshold)
	d.LowerThreshold = uint32(e.LowerThreshold)
	return d
}
