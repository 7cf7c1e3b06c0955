package lbd

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
)

// fakeChecker records the targets it was given; tests deliver events
// through the daemon themselves.
type fakeChecker struct{ targets map[Key]Target }

func (f *fakeChecker) Replace(t map[Key]Target) error { f.targets = t; return nil }
func (f *fakeChecker) Close() error                   { return nil }

const farm = `virtualServers:
  web:
    address: 198.18.100.1
    port: 80
    scheduler: wrr
    healthCheck: {type: tcp, interval: 1s}
    sorryServer: {address: 198.18.2.1, port: 8080}
    realServers:
      - {address: 198.18.1.1, port: 8080, weight: 3}
      - {address: 198.18.1.2, port: 8080, inhibitOnFailure: true}
  dns:
    address: 198.18.100.2
    port: 53
    protocol: udp
    realServers:
      - {address: 198.18.1.5}
`

// daemonOnFakes starts a Daemon for file over proxiertest's fakes, with
// an Injector counting every kernel operation.
func daemonOnFakes(t *testing.T, file string) (*Daemon, *proxiertest.FakeDeps, *proxiertest.Injector, *fakeChecker) {
	t.Helper()
	cfg, err := Load([]byte(file))
	if err != nil {
		t.Fatal(errString(err))
	}
	pc := cfg.ProxierConfig()
	fakes := proxiertest.NewFakeDeps(pc)
	in := proxiertest.New()
	p, err := proxier.New(pc, in.Wrap(fakes.Deps()))
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeChecker{}
	d, err := New(context.Background(), p, cfg, &Options{Checker: func(func(Event), func(Key, time.Duration, error)) (Checker, error) { return fc, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return d, fakes, in, fc
}

func ipvsOps(in *proxiertest.Injector) []string {
	var ops []string
	for _, o := range in.Ops() {
		if o.Subsystem == proxier.SubsystemIPVS && o.Call == "IPVS.Apply" {
			ops = append(ops, o.Desc)
		}
	}
	return ops
}

func endpoints(d *Daemon, vs string) []string {
	var out []string
	for _, e := range d.sent[vs].Endpoints {
		s := e.Addr.String()
		if e.Quiesced {
			s += " quiesced"
		}
		out = append(out, s)
	}
	return out
}

func TestHealthEventsChangeTheService(t *testing.T) {
	ctx := context.Background()
	d, fakes, in, fc := daemonOnFakes(t, farm)
	if len(fc.targets) != 2 {
		t.Fatalf("targets %v, want web's two real servers (dns has no check)", fc.targets)
	}
	rs1 := Key{"web", netip.MustParseAddrPort("198.18.1.1:8080")}
	rs2 := Key{"web", netip.MustParseAddrPort("198.18.1.2:8080")}
	steps := []struct {
		ev   Event
		want []string
		ops  int // IPVS requests
	}{
		// Down without inhibit: removed (its TCP destination drains at weight 0).
		{Event{Key: rs1}, []string{"198.18.1.2"}, 1},
		// Down with inhibit: kept at weight 0; none is up: the sorry server.
		{Event{Key: rs2}, []string{"198.18.1.2 quiesced", "198.18.2.1"}, 2},
		// The same again changes nothing.
		{Event{Key: rs2}, []string{"198.18.1.2 quiesced", "198.18.2.1"}, 0},
		// One back: at its weight; the sorry server goes.
		{Event{Key: rs1, Up: true}, []string{"198.18.1.1", "198.18.1.2 quiesced"}, 2},
		{Event{Key: rs2, Up: true}, []string{"198.18.1.1", "198.18.1.2"}, 1},
	}
	for i, s := range steps {
		in.Reset()
		d.event(ctx, s.ev)
		if got := endpoints(d, "web"); !slices.Equal(got, s.want) {
			t.Errorf("step %d: endpoints %v, want %v", i, got, s.want)
		}
		if ops := ipvsOps(in); len(ops) != s.ops {
			t.Errorf("step %d: IPVS requests %q, want %d", i, ops, s.ops)
		}
	}
	dump := fakes.IPVS.Dump()
	for _, want := range []string{"-r 198.18.1.1:8080 -m -w 3", "-r 198.18.1.2:8080 -m -w 1", "-r 198.18.2.1:8080 -m -w 0"} {
		if !strings.Contains(dump, want) {
			t.Errorf("IPVS lacks %q:\n%s", want, dump)
		}
	}
}

func TestReloadSendsOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	d, fakes, in, fc := daemonOnFakes(t, farm)
	next, err := Load([]byte(strings.Replace(farm, "weight: 3", "weight: 5", 1)))
	if err != nil {
		t.Fatal(err)
	}
	in.Reset()
	a := d.reload(ctx, next)
	if a.Err != nil || a.IPVSRequests != 1 || !slices.Equal(a.Services, []string{"web"}) {
		t.Errorf("reload of one weight = %+v, want web, one IPVS request", a)
	}
	if ops := ipvsOps(in); len(ops) != 1 || !strings.Contains(ops[0], "198.18.1.1") {
		t.Errorf("IPVS requests %q, want one update of 198.18.1.1", ops)
	}
	if !strings.Contains(fakes.IPVS.Dump(), "-r 198.18.1.1:8080 -m -w 5") {
		t.Errorf("weight not changed in place:\n%s", fakes.IPVS.Dump())
	}
	in.Reset()
	if a := d.reload(ctx, next); a.IPVSRequests != 0 || len(in.Ops()) != 0 {
		t.Errorf("a reload of the same file = %+v, ops %v; want nothing sent", a, in.Ops())
	}
	// A real server that went down stays down across a reload that keeps it.
	d.event(ctx, Event{Key: Key{"web", netip.MustParseAddrPort("198.18.1.2:8080")}})
	d.reload(ctx, next)
	if got := endpoints(d, "web"); !slices.Equal(got, []string{"198.18.1.1", "198.18.1.2 quiesced"}) {
		t.Errorf("after a reload, endpoints %v, want the failed one still quiesced", got)
	}
	// A virtual server removed goes; its checks with it.
	last, err := Load([]byte(farm[:strings.Index(farm, "  dns:")]))
	if err != nil {
		t.Fatal(err)
	}
	if a := d.reload(ctx, last); !slices.Equal(a.Services, []string{"dns", "web"}) && !slices.Equal(a.Services, []string{"web", "dns"}) {
		t.Errorf("reload removing dns and changing web back = %+v", a)
	}
	if strings.Contains(fakes.IPVS.Dump(), "198.18.100.2") {
		t.Errorf("dns's virtual server left:\n%s", fakes.IPVS.Dump())
	}
	if len(fc.targets) != 2 {
		t.Errorf("targets after reload %v", fc.targets)
	}
}

func TestDryRunPrintsThePlan(t *testing.T) {
	var b strings.Builder
	if err := DryRun(context.Background(), &b, "testdata/lb.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-A -t 198.18.100.1:80 -s wrr -p 600 -M 255.255.255.0", "-a -f 7 -r 198.18.1.11:0 -g -w 0", "ip addr add 198.18.100.2/32"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
}
