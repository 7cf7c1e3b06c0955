package proxiertest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ipvskit/ipvskit/proxier"
)

// Op is one kernel operation made through an Injector's Deps.
type Op struct {
	// Index is the operation's position in the run, counted from 0 since
	// New or the last Reset, across subsystems.
	Index int
	// Subsystem is the part of the kernel state the operation is on, as
	// proxier.OpError names it: ipvs for the IPVS client, addresses for
	// the VIP link, sysctl, rules for a netfilter back end.
	Subsystem proxier.Subsystem
	// Family is the back end's family for rules operations, 0 otherwise.
	Family proxier.Family
	// Position is the operation's position among those of its Subsystem
	// in the run, counted from 0.
	Position int
	// Call is the Deps method that made it: "IPVS.Apply", "Link.Update",
	// "Rules.Apply", ...
	Call string
	// Desc says what the operation does: "add service tcp
	// 198.18.100.1:80", "bind 198.18.100.1 on ipvskit0", ...
	Desc string
}

func (o Op) String() string {
	sub := string(o.Subsystem)
	if o.Family != 0 {
		sub += " " + o.Family.String()
	}
	return fmt.Sprintf("#%d %s[%d] %s: %s", o.Index, sub, o.Position, o.Call, o.Desc)
}

// At selects the operation at position pos of subsystem s (see Op), for
// FailFirst.
func At(s proxier.Subsystem, pos int) func(Op) bool {
	return func(o Op) bool { return o.Subsystem == s && o.Position == pos }
}

// Mode is how an injected failure behaves; see the package comment.
type Mode uint8

// Modes.
const (
	// CutShort: the failing operation and those after it in the same call
	// do not take effect; those before it do.
	CutShort Mode = iota
	// Refuse: only the failing operation does not take effect.
	Refuse
	// LoseReply: every operation of the call takes effect, and the call
	// reports the failure.
	LoseReply
)

// Modes lists every Mode, for sweeps.
var Modes = []Mode{CutShort, Refuse, LoseReply}

func (m Mode) String() string {
	switch m {
	case CutShort:
		return "CutShort"
	case Refuse:
		return "Refuse"
	case LoseReply:
		return "LoseReply"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ErrInjected is wrapped by every injected failure.
var ErrInjected = errors.New("proxiertest: injected failure")

// InjectedError is an injected failure of one operation. It matches
// ErrInjected with errors.Is.
type InjectedError struct {
	Op   Op
	Mode Mode
}

func (e *InjectedError) Error() string {
	return fmt.Sprintf("proxiertest: injected failure (%v) of operation %v", e.Mode, e.Op)
}

// Is reports whether target is ErrInjected.
func (e *InjectedError) Is(target error) bool { return target == ErrInjected }

// Injector counts the operations made through the Deps it wraps and fails
// the one a fault selects. It is safe for concurrent use; the zero value is
// not ready, use New.
type Injector struct {
	mu       sync.Mutex
	ops      []Op
	perSub   map[proxier.Subsystem]int
	match    func(Op) bool // the armed fault; nil if none
	mode     Mode
	injected *InjectedError // the fault that fired since the last Reset
}

// New returns an Injector with nothing armed.
func New() *Injector {
	return &Injector{perSub: map[proxier.Subsystem]int{}}
}

// Reset forgets the operations recorded so far, counts from 0 again and
// disarms the fault.
func (in *Injector) Reset() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.ops, in.perSub, in.match, in.injected = nil, map[proxier.Subsystem]int{}, nil, nil
}

// FailAt arms a fault: the operation with Index index fails, with mode m.
// It replaces any fault armed before. A fault fires once.
func (in *Injector) FailAt(index int, m Mode) {
	in.FailFirst(func(o Op) bool { return o.Index == index }, m)
}

// FailFirst arms a fault: the first operation from now on for which match
// returns true fails, with mode m. It replaces any fault armed before. A
// fault fires once. match is called with the Injector locked: it must not
// call the Injector.
func (in *Injector) FailFirst(match func(Op) bool, m Mode) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.match, in.mode = match, m
}

// Ops returns the operations recorded since New or the last Reset, in
// order. Every operation of a call is recorded, also those a CutShort
// fault kept from taking effect.
func (in *Injector) Ops() []Op {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Op(nil), in.ops...)
}

// Injected returns the failure injected since the last Reset, or nil.
func (in *Injector) Injected() *InjectedError {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.injected
}

// call records the operations of one call, described by descs, and returns
// the index within the call of the one to fail (-1 if none) and its error.
func (in *Injector) call(s proxier.Subsystem, fam proxier.Family, call string, descs ...string) (int, *InjectedError) {
	in.mu.Lock()
	defer in.mu.Unlock()
	fail, ie := -1, (*InjectedError)(nil)
	for i, d := range descs {
		o := Op{Index: len(in.ops), Subsystem: s, Family: fam, Position: in.perSub[s], Call: call, Desc: d}
		in.perSub[s]++
		in.ops = append(in.ops, o)
		if fail < 0 && in.match != nil && in.match(o) {
			fail, ie = i, &InjectedError{Op: o, Mode: in.mode}
			in.match, in.injected = nil, ie
		}
	}
	return fail, ie
}

// single runs a call of one operation: do is called unless the fault
// keeps it from taking effect; wrap turns the injected error into the
// client's own error type.
func (in *Injector) single(s proxier.Subsystem, fam proxier.Family, call, desc string, do func() error, wrap func(error) error) error {
	i, ie := in.call(s, fam, call, desc)
	if i < 0 {
		return do()
	}
	if ie.Mode == LoseReply {
		return errors.Join(wrap(ie), do())
	}
	return wrap(ie)
}

// valued is single for a call that returns a value: under LoseReply the
// call is made and its value dropped.
func valued[T any](in *Injector, s proxier.Subsystem, call, desc string, do func() (T, error), wrap func(error) error) (T, error) {
	var v T
	err := in.single(s, 0, call, desc, func() error {
		var err error
		v, err = do()
		return err
	}, wrap)
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

func same(err error) error { return err }
