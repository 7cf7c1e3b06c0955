package ipvs

import (
	"fmt"
	"slices"
)

// The text form of IPVS state is ipvsadm's: the lines `ipvsadm -Sn` prints
// and `ipvsadm -R` reads, e.g.
//
//	-A -t 198.18.0.1:80 -s rr
//	-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1
//	-A -f 7 -6 -s sh -p 300 -M 64 -b sh-port
//	-a -f 7 -6 -r [2001:db8::1]:0 -i -w 2 --tun-type gue --tun-port 6080 --tun-nocsum
//
// so that state can be diffed, logged, and seeded with either tool.

// SaveText renders s exactly as `ipvsadm -Sn` prints the same table: one
// "-A" line per service followed by an "-a" line per destination, services
// and destinations sorted as ipvsadm sorts them. Like ipvsadm it leaves out
// destination thresholds, and statistics; MarshalText keeps thresholds.
//
// A value ipvsadm cannot express (a protocol other than TCP, UDP and SCTP, a
// Bypass destination, a tunnel with both checksum flags) is an error.
func (s Snapshot) SaveText() ([]byte, error) { return s.appendText(nil, false) }

// MarshalText renders s as SaveText does, and adds "-x U -y L" to every
// destination with an upper or lower threshold, so that UnmarshalText gets
// the same table back. The text is valid `ipvsadm -R` input; for a table
// without thresholds it is byte for byte what `ipvsadm -Sn` prints.
func (s Snapshot) MarshalText() ([]byte, error) { return s.appendText(nil, true) }

func (s Snapshot) appendText(b []byte, thresholds bool) ([]byte, error) {
	svcs := slices.Clone(s.Services)
	slices.SortStableFunc(svcs, func(a, b ServiceSnapshot) int { return compareServicesText(a.Service, b.Service) })
	for _, ss := range svcs {
		l, err := serviceLine('A', ss.Service)
		if err != nil {
			return nil, err
		}
		b = append(append(b, l.format(thresholds)...), '\n')
		dests := slices.Clone(ss.Destinations)
		slices.SortStableFunc(dests, func(a, b DestinationInfo) int {
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

// UnmarshalText replaces *s with the table that text describes: ipvsadm
// -Sn output (or MarshalText's), "-A" and "-a" lines only. A destination
// line must follow its service's line. Defaults are ipvsadm's (scheduler
// wlc, persistence 300 s, weight 1, direct routing). Errors are *TextError
// values naming the line and the option at fault; a service or destination
// given twice is one too.
func (s *Snapshot) UnmarshalText(text []byte) error {
	lines, nums, err := parseTextLines(string(text))
	if err != nil {
		return err
	}
	var (
		out   Snapshot
		index = map[ServiceKey]int{}
		seen  = map[ServiceKey]map[DestinationKey]bool{}
	)
	for i, l := range lines {
		fail := func(e *TextError) error { e.Line = nums[i]; return e }
		svc, terr := l.service()
		if terr != nil {
			return fail(terr)
		}
		k := svc.Key()
		switch l.cmd {
		case 'A':
			if _, dup := index[k]; dup {
				return fail(textErr("service-address", l.textService(), "service given twice"))
			}
			if err := validateService(svc); err != nil {
				return fail(textErr("", "", "%w", err))
			}
			index[k] = len(out.Services)
			seen[k] = map[DestinationKey]bool{}
			out.Services = append(out.Services, ServiceSnapshot{ServiceInfo: ServiceInfo{Service: svc}})
		case 'a':
			j, ok := index[k]
			if !ok {
				return fail(textErr("service-address", l.textService(), "destination before its service's -A line"))
			}
			d := l.destination()
			if seen[k][d.Key()] {
				return fail(textErr("real-server", textAddrPort(d.Addr, d.Port), "destination given twice"))
			}
			if err := validateDest(k, d); err != nil {
				return fail(textErr("", "", "%w", err))
			}
			seen[k][d.Key()] = true
			out.Services[j].Destinations = append(out.Services[j].Destinations, DestinationInfo{Destination: d})
		default:
			return fail(textErr("", "-"+string(l.cmd), "a saved table has only -A and -a lines"))
		}
	}
	*s = out
	return nil
}

// MarshalText renders b's requests, in order, as `ipvsadm -R` input: -A,
// -E and -D for services, -a, -e and -d for destinations, in the form
// `ipvsadm -Sn` uses, with -x and -y for destinations with thresholds.
// Piping it to `ipvsadm -R` makes the same requests. A batch with an invalid
// request (see Err) is an error.
func (b *Batch) MarshalText() ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	var out []byte
	for _, op := range b.ops {
		var (
			l   *textLine
			err error
		)
		switch op.Kind {
		case OpAddService:
			l, err = serviceLine('A', op.Service)
		case OpUpdateService:
			l, err = serviceLine('E', op.Service)
		case OpDeleteService:
			l, err = serviceLine('D', op.Service)
		case OpAddDestination:
			l, err = destLine('a', op.Service, op.Destination)
		case OpUpdateDestination:
			l, err = destLine('e', op.Service, op.Destination)
		case OpDeleteDestination:
			l, err = destLine('d', op.Service, op.Destination)
		default:
			err = fmt.Errorf("ipvs text: batch request of kind %v", op.Kind)
		}
		if err != nil {
			return nil, err
		}
		out = append(append(out, l.format(true)...), '\n')
	}
	return out, nil
}

// UnmarshalText appends to b the requests that text, `ipvsadm -R` input,
// makes: one per -A, -E, -D, -a, -e or -d line (an optional leading
// "ipvsadm" on a line is skipped, as are blank lines and lines starting with
// '#'). Defaults are ipvsadm's. Errors are *TextError values naming the line
// and the option at fault; on error b is left unchanged.
func (b *Batch) UnmarshalText(text []byte) error {
	lines, nums, err := parseTextLines(string(text))
	if err != nil {
		return err
	}
	nb := Batch{StopOnError: b.StopOnError, ops: slices.Clone(b.ops), err: b.err}
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
		if nb.err != nil && b.err == nil {
			return &TextError{Line: nums[i], Err: fmt.Errorf("%w: %w", ErrText, nb.err)}
		}
	}
	*b = nb
	return nil
}
