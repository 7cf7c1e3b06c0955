// Package contract holds expectations that ipvs.Client (against a kernel)
// and ipvstest.Fake (in memory) must both meet, read back through an
// independent oracle (ipvsadm -Sn for the kernel), beside another
// program's virtual services. It complements ipvstest's differential
// script (TestIntegrationFakeMatchesKernel), which compares the two
// call by call through the library itself.
package contract

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
)

// World is one fresh, empty IPVS table with an implementation working on
// it, and ways for a test to do what other programs do there.
type World struct {
	IPVS ipvs.Interface
	// Restore makes the services and destinations of ipvsadm -R lines, as
	// another program (ipvsadm itself for the kernel) would.
	Restore func(t *testing.T, lines ...string)
	// Oracle returns the table as ipvsadm -Sn prints it, read without
	// IPVS.
	Oracle func(t *testing.T) string
	// SyncInterface, if set, returns the name of an interface sync
	// daemons may use (made on the first call), and Daemons is their
	// oracle: the running daemons as ipvsadm -Ln --daemon prints them
	// (see DaemonLines). Without them the sync daemon expectation skips.
	SyncInterface func(t *testing.T) string
	Daemons       func(t *testing.T) string
}

// Run runs every expectation as a subtest, each in a world from newWorld
// that starts with another program's services (theirs), which every check
// of the table expects to find as they were.
func Run(t *testing.T, newWorld func(t *testing.T) World) {
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, w World)
	}{
		{"OracleShowsWhatWasMade", made},
		{"AnotherProgramsServicesAreUntouched", others},
		{"CanceledContextChangesNothing", canceled},
		{"InvalidBatchSendsNothing", invalidBatch},
		{"KernelErrorsNameWhatFailed", kernelErrors},
		{"SyncDaemons", syncDaemons},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.Restore(t, theirs...)
			want(t, w)
			tc.f(t, w)
		})
	}
}

var (
	a   = netip.MustParseAddr
	web = ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.0.1"), Port: 80, Scheduler: "rr"}
	dns = ipvs.Service{Protocol: ipvs.UDP, Addr: a("2001:db8::1"), Port: 53, Scheduler: "wlc"}
	fw  = ipvs.Service{FWMark: 7, Family: ipvs.IPv4, Scheduler: "wrr"}
)

func masq(addr string, port uint16, w uint32) ipvs.Destination {
	return ipvs.Destination{Addr: a(addr), Port: port, Forward: ipvs.Masq, Weight: w}
}

func made(t *testing.T, w World) {
	ctx := context.Background()
	for _, s := range []ipvs.Service{web, dns, fw} {
		if err := w.IPVS.AddService(ctx, s); err != nil {
			t.Fatalf("AddService %v: %v", s.Key(), err)
		}
	}
	var b ipvs.Batch
	b.AddDestination(web.Key(), masq("198.18.1.1", 8080, 1))
	b.AddDestination(web.Key(), masq("198.18.1.2", 8080, 2))
	b.AddDestination(web.Key(), masq("198.18.1.3", 8080, 3))
	b.AddDestination(dns.Key(), ipvs.Destination{Addr: a("2001:db8:1::1"), Port: 53, Forward: ipvs.DirectRoute, Weight: 4})
	if err := w.IPVS.Apply(ctx, &b); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := w.IPVS.UpdateDestination(ctx, web.Key(), masq("198.18.1.2", 8080, 20)); err != nil {
		t.Fatal(err)
	}
	if err := w.IPVS.DeleteDestination(ctx, web.Key(), masq("198.18.1.3", 8080, 0).Key()); err != nil {
		t.Fatal(err)
	}
	edited := web
	edited.Scheduler = "wlc"
	edited.Persistence = ipvs.Persistence{Timeout: 120 * time.Second, PrefixLen: 16}
	if err := w.IPVS.UpdateService(ctx, edited); err != nil {
		t.Fatal(err)
	}
	want(t, w,
		"-A -t 198.18.0.1:80 -s wlc -p 120 -M 255.255.0.0",
		"-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1",
		"-a -t 198.18.0.1:80 -r 198.18.1.2:8080 -m -w 20",
		"-A -u [2001:db8::1]:53 -s wlc",
		"-a -u [2001:db8::1]:53 -r [2001:db8:1::1]:53 -g -w 4",
		"-A -f 7 -s wrr",
	)
	if err := w.IPVS.DeleteService(ctx, dns.Key()); err != nil {
		t.Fatal(err)
	}
	want(t, w,
		"-A -t 198.18.0.1:80 -s wlc -p 120 -M 255.255.0.0",
		"-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1",
		"-a -t 198.18.0.1:80 -r 198.18.1.2:8080 -m -w 20",
		"-A -f 7 -s wrr",
	)
}

// theirs is another program's table, in every world from the start: a
// service on our VIP's address with another protocol and one on another
// port, each with a destination.
var theirs = []string{
	"-A -u 198.18.0.1:80 -s rr",
	"-a -u 198.18.0.1:80 -r 198.18.9.1:80 -m -w 1",
	"-A -t 198.18.0.1:443 -s sh",
	"-a -t 198.18.0.1:443 -r 198.18.9.2:443 -g -w 3",
}

// others: everything done to our services, failures included, leaves
// another program's services on the same address as they were.
func others(t *testing.T, w World) {
	ctx := context.Background()
	if err := w.IPVS.AddService(ctx, web); err != nil {
		t.Fatal(err)
	}
	var b ipvs.Batch
	b.AddDestination(web.Key(), masq("198.18.1.1", 8080, 1))
	b.AddDestination(web.Key(), masq("198.18.1.1", 8080, 1)) // exists: fails alone
	b.DeleteService(ipvs.ServiceKey{Protocol: ipvs.TCP, Addr: a("198.18.0.9"), Port: 80})
	b.AddDestination(web.Key(), masq("198.18.1.2", 8080, 1))
	var be *ipvs.BatchError
	if err := w.IPVS.Apply(ctx, &b); !errors.As(err, &be) || len(be.Failed) != 2 {
		t.Fatalf("Apply of a batch with two failing requests: %v; want a *BatchError listing 2", err)
	}
	if err := w.IPVS.ZeroService(ctx, web.Key()); err != nil {
		t.Fatal(err)
	}
	want(t, w,
		"-A -t 198.18.0.1:80 -s rr",
		"-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1",
		"-a -t 198.18.0.1:80 -r 198.18.1.2:8080 -m -w 1",
	)
	if err := w.IPVS.DeleteService(ctx, web.Key()); err != nil {
		t.Fatal(err)
	}
	want(t, w)
}

// canceled: a call with a canceled context fails with its error and
// changes nothing.
func canceled(t *testing.T, w World) {
	if err := w.IPVS.AddService(context.Background(), web); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var b ipvs.Batch
	b.AddService(dns)
	edited := web
	edited.Scheduler = "wlc"
	for name, err := range map[string]error{
		"AddService":     w.IPVS.AddService(ctx, dns),
		"UpdateService":  w.IPVS.UpdateService(ctx, edited),
		"AddDestination": w.IPVS.AddDestination(ctx, web.Key(), masq("198.18.1.1", 8080, 1)),
		"DeleteService":  w.IPVS.DeleteService(ctx, web.Key()),
		"Apply":          w.IPVS.Apply(ctx, &b),
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: %v; want context.Canceled", name, err)
		}
	}
	want(t, w, "-A -t 198.18.0.1:80 -s rr")
}

// invalidBatch: a batch with an invalid request is refused whole, before
// anything is sent, with a *ValidationError naming the field.
func invalidBatch(t *testing.T, w World) {
	var b ipvs.Batch
	b.AddService(web)
	b.AddDestination(web.Key(), masq("198.18.1.1", 8080, 1))
	b.AddDestination(web.Key(), ipvs.Destination{Addr: a("2001:db8::9"), Port: 80, Forward: ipvs.Masq, Weight: 1, UpperThreshold: 1, LowerThreshold: 2})
	var ve *ipvs.ValidationError
	if err := w.IPVS.Apply(context.Background(), &b); !errors.As(err, &ve) || ve.Field == "" {
		t.Fatalf("Apply of a batch with an invalid request: %v; want a *ValidationError", err)
	}
	want(t, w)
}

// want fails t unless the oracle shows exactly lines and theirs.
func want(t *testing.T, w World, lines ...string) {
	t.Helper()
	lines = slices.Concat(lines, theirs)
	slices.Sort(lines)
	var got []string
	if text := strings.TrimSpace(w.Oracle(t)); text != "" {
		got = strings.Split(text, "\n")
		slices.Sort(got)
	}
	if !slices.Equal(got, lines) {
		t.Fatalf("the table:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(lines, "\n  "))
	}
}
