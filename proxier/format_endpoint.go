package proxier

import "github.com/ipvskit/ipvskit/proxier/internal/statefile"

// An endpoint in the text form: as in Go, but for its weight, which the
// form writes as ipvsadm and keepalived do (weight 0 is a quiesced
// endpoint; the default, 1, is left out).

// endpointOf is a decoded endpoint: `weight: 0` is Quiesced; `weight: 1`,
// like no weight, is the zero Weight, which means 1 (so that what is read
// is written and read back the same: the writer leaves 1 out); any other
// weight is Weight as written.
func endpointOf(t *statefile.Endpoint) Endpoint {
	e := Endpoint{
		Addr: t.Addr, Ports: t.Ports, Ready: t.Ready, Serving: t.Serving, Terminating: t.Terminating, Local: t.Local,
		UpperThreshold: t.UpperThreshold, LowerThreshold: t.LowerThreshold,
	}
	if w := t.Weight; w != nil {
		switch *w {
		case 0:
			e.Quiesced = true
		case 1:
		default:
			e.Weight = *w
		}
	}
	return e
}

// text is e in the text form: a quiesced endpoint has weight 0 (its
// Weight, which validation refuses beside Quiesced, is not written); a
// Weight of 0 or 1 is left out.
func (e *Endpoint) text() statefile.Endpoint {
	t := statefile.Endpoint{
		Addr: e.Addr, Ports: e.Ports, Ready: e.Ready, Serving: e.Serving, Terminating: e.Terminating, Local: e.Local,
		UpperThreshold: e.UpperThreshold, LowerThreshold: e.LowerThreshold,
	}
	switch {
	case e.Quiesced:
		t.Weight = new(int)
	case e.Weight != 0 && e.Weight != 1:
		w := e.Weight
		t.Weight = &w
	}
	return t
}
