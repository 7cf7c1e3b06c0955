package ipvsadm

import (
	"fmt"
	"slices"

	"github.com/ipvskit/ipvskit/ipvs"
)

// Save renders s exactly as `ipvsadm -Sn` prints the same table: one
// "-A" line per service followed by an "-a" line per destination, services
// and destinations sorted as ipvsadm sorts them. Like ipvsadm it leaves out
// destination thresholds, and statistics; MarshalSnapshot keeps thresholds.
//
// A value ipvsadm cannot express (a protocol other than TCP, UDP and SCTP, an
// ipvs.Bypass destination, a tunnel with both checksum flags) is an error.
func Save(s ipvs.Snapshot) ([]byte, error) { return appendSnapshot(nil, s, false) }

// MarshalSnapshot renders s as Save does, and adds "-x U -y L" to every
// destination with an upper or lower threshold, so that UnmarshalSnapshot gets
// the same table back. The text is valid `ipvsadm -R` input; for a table
// without thresholds it is byte for byte what `ipvsadm -Sn` prints.
func MarshalSnapshot(s ipvs.Snapshot) ([]byte, error) { return appendSnapshot(nil, s, true) }

func appendSnapshot(b []byte, s ipvs.Snapshot, thresholds bool) ([]byte, error) {
	svcs := slices.Clone(s.Services)
	slices.SortStableFunc(svcs, func(a, b ipvs.ServiceSnapshot) int { return compareServicesText(a.Service, b.Service) })
	for _, ss := range svcs {
		l, err := serviceLine('A', ss.Service)
		if err != nil {
			return nil, err
		}
		b = append(append(b, l.format(thresholds)...), '\n')
		dests := slices.Clone(ss.Destinations)
		slices.SortStableFunc(dests, func(a, b ipvs.DestinationInfo) int {
			return compareDestinationsText(a.Destination, b.Destination)
		})
		for _, d := range dests {
			l, err := destLine('a', ss.Service, d.Destination)
			if err != nil {
				return nil, err
			}
			b = append(append(b, l.format(thresholds)...), '\n')
		}
	}
	return b, nil
}

// UnmarshalSnapshot returns the table that text describes: ipvsadm
// -Sn output (or MarshalSnapshot's), "-A" and "-a" lines only. A destination
// line must follow its service's line. Defaults are ipvsadm's (scheduler
// wlc, persistence 300 s, weight 1, direct routing). Errors are *TextError
// values naming the line and the option at fault; a service or destination
// given twice is one too.
func UnmarshalSnapshot(text []byte) (ipvs.Snapshot, error) {
	lines, nums, err := parseTextLines(string(text))
	if err != nil {
		return ipvs.Snapshot{}, err
	}
	var (
		out   ipvs.Snapshot
		index = map[ipvs.ServiceKey]int{}
		seen  = map[ipvs.ServiceKey]map[ipvs.DestinationKey]bool{}
	)
	for i, l := range lines {
		if terr := addSaved(&out, l, index, seen); terr != nil {
			terr.Line = nums[i]
			return ipvs.Snapshot{}, terr
		}
	}
	return out, nil
}

// addSaved adds the service or destination of one line of a saved table to
// out; index and seen are the services and destinations it holds.
func addSaved(out *ipvs.Snapshot, l *textLine, index map[ipvs.ServiceKey]int, seen map[ipvs.ServiceKey]map[ipvs.DestinationKey]bool) *TextError {
	svc, terr := l.service()
	if terr != nil {
		return terr
	}
	k := svc.Key()
	switch l.cmd {
	case 'A':
		if _, dup := index[k]; dup {
			return textErr("service-address", l.textService(), "service given twice")
		}
		if err := ipvs.ValidateService(svc); err != nil {
			return textErr("", "", "%w", err)
		}
		index[k] = len(out.Services)
		seen[k] = map[ipvs.DestinationKey]bool{}
		out.Services = append(out.Services, ipvs.ServiceSnapshot{ServiceInfo: ipvs.ServiceInfo{Service: svc}})
	case 'a':
		j, ok := index[k]
		if !ok {
			return textErr("service-address", l.textService(), "destination before its service's -A line")
		}
		d := l.destination()
		if seen[k][d.Key()] {
			return textErr("real-server", textAddrPort(d.Addr, d.Port), "destination given twice")
		}
		if err := ipvs.ValidateDestination(k, d); err != nil {
			return textErr("", "", "%w", err)
		}
		seen[k][d.Key()] = true
		out.Services[j].Destinations = append(out.Services[j].Destinations, ipvs.DestinationInfo{Destination: d})
	default:
		return textErr("", "-"+string(l.cmd), "a saved table has only -A and -a lines")
	}
	return nil
}

// MarshalBatch renders b's requests, in order, as `ipvsadm -R` input: -A,
// -E and -D for services, -a, -e and -d for destinations, in the form
// `ipvsadm -Sn` uses, with -x and -y for destinations with thresholds.
// Piping it to `ipvsadm -R` makes the same requests. A batch with an invalid
// request (see ipvs.Batch.Err) is an error.
func MarshalBatch(b *ipvs.Batch) ([]byte, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	var out []byte
	for _, op := range b.All() {
		l, err := opLine(op)
		if err != nil {
			return nil, err
		}
		out = append(append(out, l.format(true)...), '\n')
	}
	return out, nil
}

// opLine is the line of one request of a batch.
func opLine(op ipvs.Op) (*textLine, error) {
	switch op.Kind {
	case ipvs.OpAddService:
		return serviceLine('A', op.Service)
	case ipvs.OpUpdateService:
		return serviceLine('E', op.Service)
	case ipvs.OpDeleteService:
		return serviceLine('D', op.Service)
	case ipvs.OpAddDestination:
		return destLine('a', op.Service, op.Destination)
	case ipvs.OpUpdateDestination:
		return destLine('e', op.Service, op.Destination)
	case ipvs.OpDeleteDestination:
		return destLine('d', op.Service, op.Destination)
	}
	return nil, fmt.Errorf("ipvs text: batch request of kind %v", op.Kind)
}

// UnmarshalBatch appends to b the requests that text, `ipvsadm -R` input,
// makes: one per -A, -E, -D, -a, -e or -d line (an optional leading
// "ipvsadm" on a line is skipped, as are blank lines and lines starting with
// '#'). Defaults are ipvsadm's. Errors are *TextError values naming the line
// and the option at fault; on error b is left unchanged.
func UnmarshalBatch(text []byte, b *ipvs.Batch) error {
	lines, nums, err := parseTextLines(string(text))
	if err != nil {
		return err
	}
	// The requests are collected, and so checked, in a copy of b first, so
	// that b only grows when every line is good (and errors number the
	// requests as b would).
	var nb ipvs.Batch
	nb.Grow(b.Len() + len(lines))
	appendOps(&nb, b.Ops())
	for i, l := range lines {
		svc, terr := l.service()
		if terr != nil {
			terr.Line = nums[i]
			return terr
		}
		k := svc.Key()
		switch l.cmd {
		case 'A':
			nb.AddService(svc)
		case 'E':
			nb.UpdateService(svc)
		case 'D':
			nb.DeleteService(k)
		case 'a':
			nb.AddDestination(k, l.destination())
		case 'e':
			nb.UpdateDestination(k, l.destination())
		case 'd':
			nb.DeleteDestination(k, l.destination().Key())
		}
		if nb.Err() != nil && b.Err() == nil {
			return &TextError{Line: nums[i], Err: fmt.Errorf("%w: %w", ErrText, nb.Err())}
		}
	}
	appendOps(b, nb.Ops()[b.Len():])
	return nil
}

// appendOps adds requests that are known to be valid to b.
func appendOps(b *ipvs.Batch, ops []ipvs.Op) {
	b.Grow(len(ops))
	for _, op := range ops {
		switch op.Kind {
		case ipvs.OpAddService:
			b.AddService(op.Service)
		case ipvs.OpUpdateService:
			b.UpdateService(op.Service)
		case ipvs.OpDeleteService:
			b.DeleteService(op.Service.Key())
		case ipvs.OpAddDestination:
			b.AddDestination(op.Service.Key(), op.Destination)
		case ipvs.OpUpdateDestination:
			b.UpdateDestination(op.Service.Key(), op.Destination)
		case ipvs.OpDeleteDestination:
			b.DeleteDestination(op.Service.Key(), op.Destination.Key())
		}
	}
}
