package vm

import (
	"slices"
	"strings"
	"testing"
)

func TestLeaveOutNamesFilesAndRefusesNeededModules(t *testing.T) {
	d, err := parseModulesDep(strings.NewReader(sampleDep))
	if err != nil {
		t.Fatal(err)
	}
	wanted := []string{"crc32c_generic", "ip_vs_rr", "dummy", "9p", "foo_bar"}
	got, err := d.leaveOut(wanted, []string{"ip_vs_rr", "dummy", "foo_bar"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ip_vs_rr", "dummy", "foo-bar"}; !slices.Equal(got, want) {
		t.Errorf("leaveOut = %q, want %q (as the files are named)", got, want)
	}
	for _, tc := range []struct{ without, msg string }{
		{"ip_vs", "ip_vs_rr needs it"},     // a loaded module depends on it
		{"9pnet", "9p needs it"},           // also a dependency only, not listed
		{"ip_vs_sh", "does not load it"},   // not in the guest at all
		{"nf_conntrack", "ip_vs needs it"}, // two levels down
	} {
		if _, err := d.leaveOut(wanted, []string{tc.without}); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("leaving out %s: err %v, want one saying %q", tc.without, err, tc.msg)
		}
	}
}

func TestLeftOutReadsTheCommandLine(t *testing.T) {
	c := &Config{Kernel: Kernel{Vmlinuz: "/v"}, Initramfs: "/i", AgentPath: "/a", MemoryMB: 1, CPUs: 1,
		withoutArg: "ip_vs_sh,foo-bar"}
	args := qemuArgs(c, "/s")
	i := slices.Index(args, "-append")
	if i < 0 {
		t.Fatalf("no -append in %q", args)
	}
	if got, want := leftOutFrom(args[i+1]+"\n"), []string{"ip_vs_sh", "foo_bar"}; !slices.Equal(got, want) {
		t.Errorf("the guest reads %q from %q, want %q", got, args[i+1], want)
	}
	c.withoutArg = ""
	if a := qemuArgs(c, "/s"); strings.Contains(strings.Join(a, " "), withoutParam) || leftOutFrom(a[slices.Index(a, "-append")+1]) != nil {
		t.Errorf("a plain boot names modules left out: %q", a)
	}
}
