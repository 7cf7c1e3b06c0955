package ipvstest

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
)

var (
	ctx  = context.Background()
	vip  = netip.MustParseAddr("198.18.0.1")
	web  = ipvs.Service{Protocol: ipvs.TCP, Addr: vip, Port: 80, Scheduler: "rr"}
	be1  = ipvs.Destination{Addr: netip.MustParseAddr("198.18.1.1"), Port: 8080, Forward: ipvs.Masq, Weight: 1}
	be2  = ipvs.Destination{Addr: netip.MustParseAddr("198.18.1.2"), Port: 8080, Forward: ipvs.Masq, Weight: 2}
	none = ipvs.ServiceKey{Protocol: ipvs.TCP, Addr: vip, Port: 81}
)

func wantErrno(t *testing.T, err error, errno syscall.Errno) {
	t.Helper()
	var ie *ipvs.Error
	if !errors.As(err, &ie) || !errors.Is(err, errno) {
		t.Fatalf("want an *ipvs.Error wrapping %v, got %#v", errno, err)
	}
}

// wantUnavailable checks a missing scheduler or persistence engine: the
// Client's message, ErrNotSupported, and not fs.ErrNotExist.
func wantUnavailable(t *testing.T, err error, want string) {
	t.Helper()
	var u *ipvs.UnavailableError
	if !errors.As(err, &u) || err.Error() != want || !errors.Is(err, ipvs.ErrNotSupported) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v, want %q matching ipvs.ErrNotSupported and not fs.ErrNotExist", err, want)
	}
}

func TestFakeKernelErrors(t *testing.T) {
	f := New()
	if err := f.AddService(ctx, web); err != nil {
		t.Fatal(err)
	}
	err := f.AddService(ctx, web)
	wantErrno(t, err, syscall.EEXIST)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("duplicate service: want fs.ErrExist, got %v", err)
	}
	wantErrno(t, f.UpdateService(ctx, ipvs.Service{Protocol: ipvs.TCP, Addr: vip, Port: 81, Scheduler: "rr"}), syscall.ESRCH)
	wantErrno(t, f.DeleteService(ctx, none), syscall.ESRCH)
	_, err = f.GetService(ctx, none)
	wantErrno(t, err, syscall.ESRCH)
	wantErrno(t, f.ZeroService(ctx, none), syscall.ESRCH)
	wantErrno(t, f.AddDestination(ctx, none, be1), syscall.ESRCH)
	wantUnavailable(t, f.AddService(ctx, ipvs.Service{Protocol: ipvs.TCP, Addr: vip, Port: 82, Scheduler: "nope"}),
		`ipvs: add service tcp 198.18.0.1:82: scheduler "nope" not available (module ip_vs_nope)`)
	wantUnavailable(t, f.AddService(ctx, ipvs.Service{Protocol: ipvs.UDP, Addr: vip, Port: 82, Scheduler: "rr", PersistenceEngine: "ftp", Persistence: ipvs.Persistence{Timeout: 1e9}}),
		`ipvs: add service udp 198.18.0.1:82: scheduler "rr" or persistence engine "ftp" not available (module ip_vs_rr or ip_vs_pe_ftp)`)
	err = f.AddDestination(ctx, none, be1)
	if want := "ipvs: add destination tcp 198.18.0.1:81 destination 198.18.1.1:8080: no such virtual server tcp 198.18.0.1:81"; err == nil || err.Error() != want || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("destination to a missing service: got %v, want %q matching fs.ErrNotExist", err, want)
	}

	if err := f.AddDestination(ctx, web.Key(), be1); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, f.AddDestination(ctx, web.Key(), be1), syscall.EEXIST)
	err = f.UpdateDestination(ctx, web.Key(), be2)
	wantErrno(t, err, syscall.ENOENT)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing destination: want fs.ErrNotExist, got %v", err)
	}
	wantErrno(t, f.DeleteDestination(ctx, web.Key(), be2.Key()), syscall.ENOENT)
	multicast := ipvs.Destination{Addr: netip.MustParseAddr("224.0.0.1"), Port: 80, Forward: ipvs.Masq, Weight: 1}
	wantErrno(t, f.AddDestination(ctx, web.Key(), multicast), syscall.EINVAL)

	// A missing service lists no destinations, without an error.
	ds, err := f.Destinations(ctx, none)
	if err != nil || len(ds) != 0 {
		t.Fatalf("destinations of a missing service: %v, %v; want none, nil", ds, err)
	}
}

// The Fake refuses bad arguments with the Client's own *ValidationError.
func TestFakeValidationMatchesClient(t *testing.T) {
	f := New()
	bad := ipvs.Service{Protocol: ipvs.TCP, Addr: vip, Port: 80} // no scheduler
	err := f.AddService(ctx, bad)
	var ve *ipvs.ValidationError
	if !errors.As(err, &ve) || ve.Field != "Service.Scheduler" || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("want a ValidationError on Service.Scheduler wrapping EINVAL, got %v", err)
	}
	var ie *ipvs.Error
	if !errors.As(err, &ie) || ie.Op != "add service" || ie.Object != "tcp 198.18.0.1:80" {
		t.Fatalf("want *ipvs.Error{add service, tcp 198.18.0.1:80}, got %#v", err)
	}
	f.AddService(ctx, web)
	err = f.AddDestination(ctx, web.Key(), ipvs.Destination{Addr: be1.Addr, Port: 1, UpperThreshold: 1, LowerThreshold: 2})
	if !errors.As(err, &ve) || ve.Field != "Destination.LowerThreshold" {
		t.Fatalf("want a ValidationError on Destination.LowerThreshold, got %v", err)
	}
	if got := f.Dump(); got != "-A -t 198.18.0.1:80 -s rr\n" {
		t.Fatalf("a refused request changed the table:\n%s", got)
	}
}

func TestFakeDefaultsOrderAndDump(t *testing.T) {
	f := New()
	if err := f.Restore(ctx, []byte("-A -t 198.18.0.1:80 -s rr\n-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m\n-a -t 198.18.0.1:80 -r 198.18.1.2:8080 -m -w 3 -x 9 -y 4\n-A -f 5 -6 -p\n")); err != nil {
		t.Fatal(err)
	}
	ds, _ := f.Destinations(ctx, web.Key())
	if len(ds) != 2 || ds[0].Addr != be2.Addr || ds[0].Family != ipvs.IPv4 {
		t.Fatalf("want the newest destination first, with its family: %+v", ds)
	}
	s, err := f.GetService(ctx, ipvs.ServiceKey{FWMark: 5, Family: ipvs.IPv6})
	if err != nil || s.Scheduler != "wlc" || s.Persistence.Timeout != 300*time.Second {
		t.Fatalf("ipvsadm's defaults (wlc, -p 300): %+v %v", s, err)
	}
	want := "-A -t 198.18.0.1:80 -s rr\n" +
		"-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1\n" +
		"-a -t 198.18.0.1:80 -r 198.18.1.2:8080 -m -w 3 -x 9 -y 4\n" +
		"-A -f 5 -6 -s wlc -p 300\n"
	if got := f.Dump(); got != want {
		t.Fatalf("Dump:\n%s\nwant:\n%s", got, want)
	}
	to, _ := f.Timeouts(ctx)
	if to != (ipvs.Timeouts{TCP: 900 * time.Second, TCPFin: 120 * time.Second, UDP: 300 * time.Second}) {
		t.Fatalf("default timeouts %+v", to)
	}
}

func TestFakeApplyKeepsGoingAndReportsEachFailure(t *testing.T) {
	f := New()
	var b ipvs.Batch
	b.AddService(web)
	b.AddDestination(web.Key(), be1)
	b.AddDestination(web.Key(), be1) // EEXIST
	b.AddDestination(none, be1)      // ESRCH
	b.AddDestination(web.Key(), be2)
	err := f.Apply(ctx, &b)
	var be *ipvs.BatchError
	if !errors.As(err, &be) || be.Total != 5 || len(be.Failed) != 2 || be.Failed[0].Index != 2 || be.Failed[1].Index != 3 {
		t.Fatalf("want failures at 2 and 3 of 5, got %v", err)
	}
	wantErrno(t, be.Failed[0].Err, syscall.EEXIST)
	wantErrno(t, be.Failed[1].Err, syscall.ESRCH)
	if ds, _ := f.Destinations(ctx, web.Key()); len(ds) != 2 {
		t.Fatalf("requests after the failures were not applied: %v", ds)
	}

	var stop ipvs.Batch
	stop.StopOnError = true
	for i := 0; i < 1030; i++ {
		stop.AddService(web) // every one fails with EEXIST
	}
	err = New().Apply(ctx, &stop) // the first succeeds, then 1023 fail, then 6 are not sent
	if !errors.As(err, &be) || len(be.Failed) != 1029 || !errors.Is(be.Failed[1028].Err, ipvs.ErrNotSent) || errors.Is(be.Failed[1022].Err, ipvs.ErrNotSent) {
		t.Fatalf("StopOnError: %d failed; last %v", len(be.Failed), be.Failed[len(be.Failed)-1].Err)
	}
}

func TestFakeDaemons(t *testing.T) {
	f := New()
	if err := f.StartDaemon(ctx, ipvs.Daemon{State: ipvs.Master, Interface: "lo", SyncID: 3}); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, f.StartDaemon(ctx, ipvs.Daemon{State: ipvs.Master, Interface: "lo"}), syscall.EEXIST)
	ds, _ := f.Daemons(ctx)
	if len(ds) != 1 || ds[0].Port != 8848 || ds[0].TTL != 1 || ds[0].Group != netip.MustParseAddr("224.0.0.81") {
		t.Fatalf("daemon defaults: %+v", ds)
	}
	if err := f.StopDaemon(ctx, ipvs.Master); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, f.StopDaemon(ctx, ipvs.Master), syscall.ESRCH)
}

func TestFakeContext(t *testing.T) {
	c, cancel := context.WithCancel(ctx)
	cancel()
	if err := New().AddService(c, web); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestFakeConcurrent(t *testing.T) {
	f := New()
	f.AddService(ctx, web)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				d := ipvs.Destination{Addr: netip.AddrFrom4([4]byte{198, 18, byte(g + 1), byte(i + 1)}), Port: 80, Forward: ipvs.Masq, Weight: 1}
				if err := f.AddDestination(ctx, web.Key(), d); err != nil {
					t.Error(err)
				}
				f.Snapshot(ctx)
			}
		}(g)
	}
	wg.Wait()
	if ds, _ := f.Destinations(ctx, web.Key()); len(ds) != 400 {
		t.Fatalf("%d destinations, want 400", len(ds))
	}
}
