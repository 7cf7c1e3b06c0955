package proxier

import (
	"context"
	"maps"
)

// Update changes the services the Proxier serves, by ID, and makes the
// kernel match, as Sync does with a whole State: a non-nil Service adds or
// replaces its ID, a nil one removes it. The node and the services not
// named stay as the last Sync or Update left them (before the first, there
// are none). It is the entry point for a caller that learns of changes one
// service at a time, such as an informer's handler: its cost follows the
// change, not the number of services.
//
// The services named are validated against the rest (a VIP, port or node
// port another service holds is refused); if any is invalid, the error is a
// *ValidationError and nothing changes, in the kernel or in what the Proxier
// serves. A failure after validation is returned as Sync's are, and the
// changes are kept: the next Sync or Update (one with no changes retries)
// repairs the kernel to the State with them.
func (p *Proxier) Update(ctx context.Context, changes map[string]*Service) (*Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &State{}
	if p.state != nil {
		s.Node = p.state.Node
		s.Services = maps.Clone(p.state.Services)
	}
	if s.Services == nil {
		s.Services = map[string]Service{}
	}
	for id, svc := range changes {
		if svc == nil {
			delete(s.Services, id)
		} else {
			s.Services[id] = *svc
		}
	}
	return p.sync(ctx, s)
}
