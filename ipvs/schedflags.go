package ipvs

import (
	"fmt"
	"strings"
)

// schedFlagName is one name of a scheduler flag: a bit, and the scheduler
// that gives it that name ("" for the flag-N names every scheduler takes).
type schedFlagName struct {
	name  string
	bit   SchedFlags
	sched string
}

// schedFlagNames are ipvsadm's names for the scheduler flags (-b), in the
// order ipvsadm writes them: sh and mh name flags 1 and 2 after what they
// do; flag-1, flag-2 and flag-3 name the bits for any scheduler.
var schedFlagNames = []schedFlagName{
	{"sh-fallback", SHFallback, "sh"},
	{"sh-port", SHPort, "sh"},
	{"mh-fallback", MHFallback, "mh"},
	{"mh-port", MHPort, "mh"},
	{"flag-1", SchedFlag1, ""},
	{"flag-2", SchedFlag2, ""},
	{"flag-3", SchedFlag3, ""},
}

// Names returns f's flags by the names ipvsadm gives them for the
// scheduler sched: sh-fallback and sh-port for sh, mh-fallback and mh-port
// for mh, flag-1, flag-2 and flag-3 for the bits no name is given. Bits
// outside the three scheduler flags follow in hex ("0x40"), which
// ParseSchedFlags refuses. The zero SchedFlags has no names.
func (f SchedFlags) Names(sched string) []string {
	var names []string
	var named SchedFlags
	for _, n := range schedFlagNames {
		if f&n.bit == 0 || named&n.bit != 0 || (n.sched != "" && n.sched != sched) {
			continue
		}
		names = append(names, n.name)
		named |= n.bit
	}
	if rest := f &^ allSchedFlags; rest != 0 {
		names = append(names, fmt.Sprintf("%#x", uint32(rest)))
	}
	return names
}

// ParseSchedFlags reads scheduler flags by the names ipvsadm takes for the
// scheduler sched (see Names): flag-1, flag-2 and flag-3 for any scheduler,
// sh-fallback and sh-port only for sh, mh-fallback and mh-port only for
// mh. Names are matched exactly, as ipvsadm does. It returns the flags of
// every name, or an error naming the first name it does not know or that
// belongs to another scheduler (with both schedulers).
func ParseSchedFlags(sched string, names ...string) (SchedFlags, error) {
	var f SchedFlags
	for _, name := range names {
		n, ok := lookupSchedFlag(name)
		switch {
		case !ok:
			return 0, fmt.Errorf("ipvs: %q is not a scheduler flag (want one of %s)", name, strings.Join(SchedFlagNames(sched), ", "))
		case n.sched != "" && n.sched != sched:
			return 0, fmt.Errorf("ipvs: scheduler flag %q belongs to the %s scheduler, not to %s", name, n.sched, schedName(sched))
		}
		f |= n.bit
	}
	return f, nil
}

// SchedFlagNames returns every name ParseSchedFlags takes for the
// scheduler sched, in the order Names writes them.
func SchedFlagNames(sched string) []string {
	var names []string
	for _, n := range schedFlagNames {
		if n.sched == "" || n.sched == sched {
			names = append(names, n.name)
		}
	}
	return names
}

func lookupSchedFlag(name string) (schedFlagName, bool) {
	for _, n := range schedFlagNames {
		if n.name == name {
			return n, true
		}
	}
	return schedFlagName{}, false
}

// schedName is sched for an error message: quoted when empty.
func schedName(sched string) string {
	if sched == "" {
		return `""`
	}
	return sched
}
