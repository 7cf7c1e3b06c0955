package ipvs

import (
	"slices"
	"strings"
	"testing"
)

func TestSchedFlagsNames(t *testing.T) {
	for _, tc := range []struct {
		sched string
		flags SchedFlags
		want  []string
	}{
		{"sh", 0, nil},
		{"sh", SHFallback | SHPort, []string{"sh-fallback", "sh-port"}},
		{"sh", SHPort | SchedFlag3, []string{"sh-port", "flag-3"}},
		{"sh", SchedFlag3, []string{"flag-3"}},
		{"mh", MHFallback, []string{"mh-fallback"}},
		{"mh", MHPort | SchedFlag3, []string{"mh-port", "flag-3"}},
		{"rr", SchedFlag1 | SchedFlag3, []string{"flag-1", "flag-3"}},
		{"", SchedFlag2, []string{"flag-2"}},
		{"wrr", SchedFlag1 | 0x40, []string{"flag-1", "0x40"}},
	} {
		if got := tc.flags.Names(tc.sched); !slices.Equal(got, tc.want) {
			t.Errorf("%v.Names(%q) = %q, want %q", tc.flags, tc.sched, got, tc.want)
		}
	}
}

// Every combination of the three flags, named for a scheduler, reads back
// as the same flags.
func TestSchedFlagsNamesParseBack(t *testing.T) {
	for _, sched := range []string{"sh", "mh", "rr", "wlc", ""} {
		for f := range SchedFlags(8) {
			flags := f << 3 // SchedFlag1 is 0x8
			got, err := ParseSchedFlags(sched, flags.Names(sched)...)
			if err != nil || got != flags {
				t.Errorf("ParseSchedFlags(%q, %q) = %v, %v; want %v", sched, flags.Names(sched), got, err, flags)
			}
		}
	}
}

func TestParseSchedFlags(t *testing.T) {
	for _, tc := range []struct {
		sched string
		names []string
		want  SchedFlags
	}{
		{"sh", nil, 0},
		{"sh", []string{"sh-port"}, SHPort},
		{"sh", []string{"sh-fallback", "flag-3"}, SHFallback | SchedFlag3},
		{"mh", []string{"mh-port", "mh-fallback"}, MHPort | MHFallback},
		{"mh", []string{"flag-2", "mh-port"}, SchedFlag2}, // the same bit, twice
		{"rr", []string{"flag-1", "flag-2", "flag-3"}, allSchedFlags},
	} {
		got, err := ParseSchedFlags(tc.sched, tc.names...)
		if err != nil || got != tc.want {
			t.Errorf("ParseSchedFlags(%q, %q) = %v, %v; want %v", tc.sched, tc.names, got, err, tc.want)
		}
	}
}

// A name of another scheduler's flag names both schedulers; an unknown
// name (names are exact, as ipvsadm's) lists the names there are.
func TestParseSchedFlagsErrors(t *testing.T) {
	for _, tc := range []struct {
		sched string
		names []string
		want  []string // in the message
	}{
		{"mh", []string{"sh-port"}, []string{`"sh-port"`, "the sh scheduler", "not to mh"}},
		{"rr", []string{"flag-1", "mh-fallback"}, []string{`"mh-fallback"`, "the mh scheduler", "not to rr"}},
		{"", []string{"sh-fallback"}, []string{`"sh-fallback"`, `not to ""`}},
		{"sh", []string{"SH-PORT"}, []string{`"SH-PORT" is not a scheduler flag`, "sh-fallback, sh-port, flag-1, flag-2, flag-3"}},
		{"rr", []string{"flag-4"}, []string{`"flag-4"`, "(want one of flag-1, flag-2, flag-3)"}},
		{"sh", []string{""}, []string{`"" is not a scheduler flag`}},
	} {
		got, err := ParseSchedFlags(tc.sched, tc.names...)
		if err == nil {
			t.Errorf("ParseSchedFlags(%q, %q) = %v, want an error", tc.sched, tc.names, got)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseSchedFlags(%q, %q): error %q does not say %q", tc.sched, tc.names, err, w)
			}
		}
	}
}
