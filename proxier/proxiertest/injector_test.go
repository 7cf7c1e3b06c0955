package proxiertest

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/conntrack/conntracktest"
	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/dummy/dummytest"
	"github.com/ipvskit/ipvskit/iptables"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvstest"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

func TestWrapCoversEveryDepsField(t *testing.T) {
	typ := reflect.TypeFor[proxier.Deps]()
	var fields []string
	for i := range typ.NumField() {
		fields = append(fields, typ.Field(i).Name)
	}
	if !slices.Equal(fields, wrapped) {
		t.Errorf("proxier.Deps has fields %v; Wrap wraps %v: wrap the new ones (deps.go)", fields, wrapped)
	}
}

var ctx = context.Background()

func a(s string) netip.Addr { return netip.MustParseAddr(s) }

var (
	svc1 = ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.100.1"), Port: 80, Scheduler: "rr"}
	svc2 = ipvs.Service{Protocol: ipvs.UDP, Addr: a("198.18.100.1"), Port: 53, Scheduler: "rr"}
)

// fourOps is a batch of four requests: a service with two destinations,
// and a second service.
func fourOps() *ipvs.Batch {
	var b ipvs.Batch
	b.AddService(svc1)
	b.AddDestination(svc1.Key(), ipvs.Destination{Addr: a("198.18.1.1"), Port: 8080, Weight: 1})
	b.AddDestination(svc1.Key(), ipvs.Destination{Addr: a("198.18.1.2"), Port: 8080, Weight: 1})
	b.AddService(svc2)
	return &b
}

func sortedLines(s string) []string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(l)
	return l
}

func TestABatchFailsAtItsRequestAsTheModeSays(t *testing.T) {
	for _, c := range []struct {
		mode     Mode
		want     []string // sorted ipvsadm -Sn lines
		failed   []int    // indexes in the BatchError
		notSent  []int    // of which wrap ipvs.ErrNotSent
		cutShort bool     // BatchError.Err is the injected error
	}{
		{CutShort, []string{"-A -t 198.18.100.1:80 -s rr", "-a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1"}, []int{2, 3}, []int{3}, true},
		{Refuse, []string{"-A -t 198.18.100.1:80 -s rr", "-A -u 198.18.100.1:53 -s rr", "-a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1"}, []int{2}, nil, false},
		{LoseReply, []string{"-A -t 198.18.100.1:80 -s rr", "-A -u 198.18.100.1:53 -s rr", "-a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1", "-a -t 198.18.100.1:80 -r 198.18.1.2:8080 -m -w 1"}, []int{2}, nil, false},
	} {
		t.Run(c.mode.String(), func(t *testing.T) {
			in, fake := New(), ipvstest.New()
			d := in.Wrap(proxier.Deps{IPVS: fake})
			in.FailFirst(At(proxier.SubsystemIPVS, 2), c.mode)
			err := d.IPVS.Apply(ctx, fourOps())
			if got := sortedLines(fake.Dump()); !slices.Equal(got, c.want) {
				t.Errorf("ipvs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			var be *ipvs.BatchError
			var ie *InjectedError
			if !errors.As(err, &be) || !errors.As(err, &ie) || !errors.Is(err, ErrInjected) {
				t.Fatalf("err = %v, want an *ipvs.BatchError around an *InjectedError", err)
			}
			var failed, notSent []int
			for _, f := range be.Failed {
				failed = append(failed, f.Index)
				if errors.Is(f.Err, ipvs.ErrNotSent) {
					notSent = append(notSent, f.Index)
				}
			}
			if !slices.Equal(failed, c.failed) || !slices.Equal(notSent, c.notSent) || be.Total != 4 || (be.Err == ie) != c.cutShort {
				t.Errorf("batch error: failed %v (not sent %v), total %d, Err %v", failed, notSent, be.Total, be.Err)
			}
			if ie.Op.Index != 2 || ie.Op.Call != "IPVS.Apply" || ie.Mode != c.mode ||
				ie.Op.Desc != "add destination tcp 198.18.100.1:80 destination 198.18.1.2:8080" {
				t.Errorf("injected %+v", ie)
			}
			if in.Injected() != ie {
				t.Errorf("Injected() = %v, want %v", in.Injected(), ie)
			}
		})
	}
}

func TestRealFailuresAroundAnInjectedOneKeepTheirIndexes(t *testing.T) {
	in, fake := New(), ipvstest.New()
	d := in.Wrap(proxier.Deps{IPVS: fake})
	must(t, fake.AddService(ctx, svc2)) // so request 3 fails with EEXIST
	in.FailAt(1, Refuse)
	err := d.IPVS.Apply(ctx, fourOps())
	var be *ipvs.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 2 || be.Failed[0].Index != 1 || be.Failed[1].Index != 3 ||
		!errors.Is(be.Failed[1].Err, fs.ErrExist) || !errors.Is(be.Failed[0].Err, ErrInjected) {
		t.Fatalf("err = %v (%+v)", err, be)
	}
}

func TestAnUpdateFailsAtItsAddressAsTheModeSays(t *testing.T) {
	add := []netip.Addr{a("198.18.100.1"), a("198.18.100.2")}
	remove := []netip.Addr{a("198.18.100.8"), a("198.18.100.9")}
	for _, c := range []struct {
		mode Mode
		at   int
		want []string
	}{
		{CutShort, 1, []string{"198.18.100.1/32", "198.18.100.8/32", "198.18.100.9/32"}},
		{CutShort, 3, []string{"198.18.100.1/32", "198.18.100.2/32", "198.18.100.9/32"}},
		{Refuse, 1, []string{"198.18.100.1/32"}},
		{Refuse, 2, []string{"198.18.100.1/32", "198.18.100.2/32", "198.18.100.8/32"}},
		{LoseReply, 0, []string{"198.18.100.1/32", "198.18.100.2/32"}},
	} {
		in, fake := New(), dummytest.New()
		d := in.Wrap(proxier.Deps{Link: fake})
		_, err := d.Link.Ensure(ctx, "vips")
		must(t, err)
		must(t, d.Link.Update(ctx, "vips", remove, nil))
		in.Reset()
		in.FailAt(c.at, c.mode)
		err = d.Link.Update(ctx, "vips", add, remove)
		got, _ := fake.LinkAddrs("vips")
		if gs := fmtPrefixes(got); !slices.Equal(gs, c.want) {
			t.Errorf("%v at %d: addresses %v, want %v", c.mode, c.at, gs, c.want)
		}
		var de *dummy.Error
		wantOp, wantAddr := "bind", slices.Concat(add, remove)[c.at]
		if c.at >= len(add) {
			wantOp = "unbind"
		}
		if !errors.As(err, &de) || !errors.Is(err, ErrInjected) || de.Op != wantOp || de.Addr.Addr() != wantAddr || de.Link != "vips" {
			t.Errorf("%v at %d: err = %v", c.mode, c.at, err)
		}
	}
}

func fmtPrefixes(ps []netip.Prefix) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

func TestASingleOperationFailsBeforeOrAfterItTakesEffect(t *testing.T) {
	for _, mode := range Modes {
		in, fake := New(), dummytest.New()
		d := in.Wrap(proxier.Deps{Link: fake})
		in.FailAt(0, mode)
		created, err := d.Link.Ensure(ctx, "vips")
		exists := slices.Contains(fake.Links(), "vips")
		if !errors.Is(err, ErrInjected) || created || exists != (mode == LoseReply) {
			t.Errorf("%v: Ensure: created %v, err %v, link exists %v", mode, created, err, exists)
		}
		// The fault fired once: the call succeeds now.
		if _, err := d.Link.Ensure(ctx, "vips"); err != nil {
			t.Errorf("%v: a second Ensure: %v", mode, err)
		}
	}
}

// recRules records what reached it.
type recRules struct{ calls []string }

func (r *recRules) Apply(context.Context, *iptables.Ruleset) error {
	r.calls = append(r.calls, "apply")
	return nil
}
func (r *recRules) Render(*iptables.Ruleset) (string, error)              { return "", nil }
func (r *recRules) Check(context.Context) ([]iptables.ObjectDrift, error) { return nil, nil }
func (r *recRules) Repair(context.Context) error                          { return nil }
func (r *recRules) Owned(context.Context) (*iptables.Ruleset, error)      { return nil, nil }
func (r *recRules) Cleanup(context.Context) error {
	r.calls = append(r.calls, "cleanup")
	return nil
}

func TestOpsAreCountedPerSubsystemAndFamily(t *testing.T) {
	in := New()
	r4, r6 := &recRules{}, &recRules{}
	sys := sysctltest.New("")
	d := in.Wrap(proxier.Deps{IPVS: ipvstest.New(), Sysctls: sys, Rules: map[proxier.Family]proxier.Rules{proxier.IPv4: r4, proxier.IPv6: r6}})
	rs := iptables.NewRuleset(iptables.IPv4, iptables.Options{})
	must(t, d.Rules[proxier.IPv4].Apply(ctx, rs))
	in.FailFirst(func(o Op) bool { return o.Subsystem == proxier.SubsystemRules && o.Family == proxier.IPv6 }, CutShort)
	if err := d.Rules[proxier.IPv6].Cleanup(ctx); !errors.Is(err, ErrInjected) {
		t.Errorf("IPv6 Cleanup: %v", err)
	}
	must(t, d.IPVS.Apply(ctx, fourOps()))
	if _, err := d.IPVS.Services(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := d.Sysctls.IPVSProfile(&sysctl.IPVSOptions{})
	must(t, err)
	_, err = d.Sysctls.Apply(ctx, p)
	must(t, err)
	if _, err := d.Rules[proxier.IPv4].Render(rs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range in.Ops() {
		got = append(got, o.String())
	}
	want := []string{
		"#0 rules IPv4[0] Rules.Apply: apply the IPv4 ruleset",
		"#1 rules IPv6[1] Rules.Cleanup: clean up the IPv6 rules",
		"#2 ipvs[0] IPVS.Apply: add service tcp 198.18.100.1:80",
		"#3 ipvs[1] IPVS.Apply: add destination tcp 198.18.100.1:80 destination 198.18.1.1:8080",
		"#4 ipvs[2] IPVS.Apply: add destination tcp 198.18.100.1:80 destination 198.18.1.2:8080",
		"#5 ipvs[3] IPVS.Apply: add service udp 198.18.100.1:53",
		"#6 ipvs[4] IPVS.Services: list services",
		"#7 sysctl[0] Sysctls.IPVSProfile: IPVS profile for the running kernel",
		"#8 sysctl[1] Sysctls.Apply: apply a profile: " + keys(p),
	}
	if !slices.Equal(got, want) {
		t.Errorf("ops:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(r4.calls, []string{"apply"}) || len(r6.calls) != 0 {
		t.Errorf("back ends saw %v and %v; the failed IPv6 Cleanup must not reach its back end", r4.calls, r6.calls)
	}
	if sys.Writes() == 0 {
		t.Errorf("the sysctl profile was not applied")
	}
}

func TestCallsTheClientRefusesAreNotOperations(t *testing.T) {
	in := New()
	d := in.Wrap(proxier.Deps{IPVS: ipvstest.New(), Link: dummytest.New()})
	in.FailAt(0, CutShort)
	var b ipvs.Batch
	b.AddService(ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.100.1"), Port: 80, Scheduler: "rr"})
	b.AddService(ipvs.Service{Protocol: ipvs.TCP, Port: 80}) // no address
	if err := d.IPVS.Apply(ctx, &b); err == nil || errors.Is(err, ErrInjected) {
		t.Errorf("invalid batch: %v, want the client's refusal", err)
	}
	if err := d.Link.Update(ctx, "vips", []netip.Addr{{}}, nil); err == nil || errors.Is(err, ErrInjected) {
		t.Errorf("invalid address: %v, want the client's refusal", err)
	}
	if len(in.Ops()) != 0 || in.Injected() != nil {
		t.Errorf("refused calls counted: %v", in.Ops())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestAConntrackDeleteFailsAtItsFilterAsTheModeSays(t *testing.T) {
	flow := func(port uint16) conntrack.Flow {
		c, to := netip.AddrPortFrom(a("198.18.0.99"), 40000), netip.AddrPortFrom(a("198.18.100.1"), port)
		return conntrack.Flow{Protocol: conntrack.UDP, Original: conntrack.Tuple{Src: c, Dst: to}, Reply: conntrack.Tuple{Src: to, Dst: c}}
	}
	filter := func(port uint16) conntrack.Filter {
		return conntrack.Filter{Protocol: conntrack.UDP, Addr: a("198.18.100.1"), Port: port}
	}
	for _, c := range []struct {
		mode    Mode
		deleted int
		left    []uint16 // ports of the flows left
	}{
		{CutShort, 1, []uint16{54, 55}},
		{Refuse, 2, []uint16{54}},
		{LoseReply, 3, nil},
	} {
		in, fake := New(), conntracktest.New()
		must(t, fake.Add(flow(53), flow(54), flow(55)))
		d := in.Wrap(proxier.Deps{Conntrack: fake})
		in.FailFirst(At(proxier.SubsystemConntrack, 1), c.mode)
		n, err := d.Conntrack.Delete(ctx, filter(53), filter(54), filter(55))
		var ce *conntrack.Error
		if !errors.Is(err, ErrInjected) || !errors.As(err, &ce) || ce.Op != "delete" || n != c.deleted {
			t.Errorf("%v: deleted %d, err %v", c.mode, n, err)
		}
		var left []uint16
		for _, f := range fake.Flows() {
			left = append(left, f.Original.Dst.Port())
		}
		if !slices.Equal(left, c.left) {
			t.Errorf("%v: flows left to ports %v, want %v", c.mode, left, c.left)
		}
		if ops := in.Ops(); len(ops) != 3 || ops[1].Desc != "delete the udp flows to 198.18.100.1:54" {
			t.Errorf("%v: ops %v", c.mode, ops)
		}
	}
}
