package proxier

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/ipvskit/ipvskit/ipvs"
)

// ConflictError says that virtual servers the State asks for are held by
// virtual servers the Proxier did not create. Nothing is applied; the
// foreign virtual servers are left as they are. It wraps fs.ErrExist.
type ConflictError struct {
	Conflicts []Conflict
}

// Conflict is one desired virtual server held by a foreign one.
type Conflict struct {
	ServiceID string
	PortName  string
	Kind      FrontendKind
	// Foreign is the virtual server found in the kernel.
	Foreign ipvs.Service
}

func (c Conflict) String() string {
	return fmt.Sprintf("services[%q] port %q (%v %v) is held by a virtual server the proxier did not create (scheduler %s)",
		c.ServiceID, c.PortName, c.Kind, c.Foreign.Key(), c.Foreign.Scheduler)
}

func (e *ConflictError) Error() string {
	lines := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		lines[i] = c.String()
	}
	return "proxier: " + strings.Join(lines, "; ")
}

// Unwrap returns fs.ErrExist.
func (e *ConflictError) Unwrap() error { return fs.ErrExist }

// conflicts returns a *ConflictError for every virtual server of want that
// foreign holds (the knowledge's, from the last read back), in a stable
// order, or nil.
func conflicts(want *desired, foreign map[ipvs.ServiceKey]ipvs.Service) error {
	if len(foreign) == 0 {
		return nil
	}
	var cs []Conflict
	for _, k := range sortedKeys(want.servers) {
		if f, ok := foreign[k]; ok {
			o := want.servers[k].owner
			cs = append(cs, Conflict{ServiceID: o.ServiceID, PortName: o.PortName, Kind: o.Kind, Foreign: f})
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return &ConflictError{Conflicts: cs}
}

// existing returns the keys of the virtual servers a failed batch could not
// add because they exist: someone else made them since the last read.
func existing(err error) []ipvs.ServiceKey {
	var be *ipvs.BatchError
	if !errors.As(err, &be) {
		return nil
	}
	var out []ipvs.ServiceKey
	for _, f := range be.Failed {
		if f.Op.Kind == ipvs.OpAddService && errors.Is(f.Err, fs.ErrExist) {
			out = append(out, f.Op.Service.Key())
		}
	}
	slices.SortFunc(out, compareServiceKeys)
	return out
}

// undoOnForeign returns the requests that take back what a failed batch b
// did to virtual servers it could not add because they exist (someone
// else's): the destinations it added to them, since the kernel carries on
// after a failed request. Nil if there is nothing to take back.
func undoOnForeign(b *ipvs.Batch, err error) *ipvs.Batch {
	keys := existing(err)
	if len(keys) == 0 {
		return nil
	}
	var be *ipvs.BatchError
	errors.As(err, &be)
	failed := map[int]bool{}
	for _, f := range be.Failed {
		failed[f.Index] = true
	}
	var undo ipvs.Batch
	for i, op := range b.Ops() {
		if op.Kind == ipvs.OpAddDestination && !failed[i] && slices.Contains(keys, op.Service.Key()) {
			undo.DeleteDestination(op.Service.Key(), op.Destination.Key())
		}
	}
	if undo.Len() == 0 {
		return nil
	}
	return &undo
}
