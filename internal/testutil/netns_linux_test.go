package testutil

import (
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

func TestNetNSIsFreshAndLoIsUp(t *testing.T) {
	ns := NewNetNS(t)
	host, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if ns.Handle().Equal(host) {
		t.Fatal("NewNetNS returned the test's own namespace")
	}

	var inside netns.NsHandle
	ns.Do(t, func() { inside, err = netns.Get() })
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	if !inside.Equal(ns.Handle()) {
		t.Fatal("Do did not run inside the namespace")
	}

	// lo is up; nothing else is (tunnel modules such as ipip and ip_gre
	// add their fallback devices, down, to every new namespace).
	links := ns.Exec(t, "ip", "-o", "link", "show")
	sawLo := false
	for _, l := range strings.Split(strings.TrimSpace(links), "\n") {
		up := strings.Contains(l, ",UP") || strings.Contains(l, "<UP")
		switch lo := strings.HasPrefix(l, "1: lo:"); {
		case lo && up:
			sawLo = true
		case lo, up:
			t.Errorf("want lo up and every other link down; got %q", l)
		}
	}
	if !sawLo {
		t.Fatalf("no lo, up, in:\n%s", links)
	}

	// The namespace the test started in is untouched.
	after, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if !after.Equal(host) {
		t.Fatal("the test's own thread changed namespace")
	}
}

func TestMissingFailsInsideTheRig(t *testing.T) {
	t.Setenv(EnvInVM, "1")
	ft := &fakeTB{TB: t}
	func() {
		defer func() { recover() }()
		Missing(ft, "a feature", "probe said no")
	}()
	if !ft.fatal || ft.skipped {
		t.Fatalf("inside the rig, Missing must fail, not skip: fatal=%v skipped=%v", ft.fatal, ft.skipped)
	}
	os.Unsetenv(EnvInVM)
	ft = &fakeTB{TB: t}
	func() {
		defer func() { recover() }()
		Missing(ft, "a feature", "probe said no")
	}()
	if ft.fatal || !ft.skipped || !strings.Contains(ft.msg, "a feature") {
		t.Fatalf("outside the rig, Missing must skip naming the feature: %+v", ft)
	}
}

type fakeTB struct {
	testing.TB
	fatal, skipped bool
	msg            string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = true
	panic("fatal")
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = true
	f.msg = format
	for _, a := range args {
		if s, ok := a.(string); ok {
			f.msg += " " + s
		}
	}
	panic("skip")
}
