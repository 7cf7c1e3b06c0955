package ipvs

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestValidateService(t *testing.T) {
	ok := Service{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80, Scheduler: "rr"}
	if err := validateService(ok); err != nil {
		t.Fatalf("valid service refused: %v", err)
	}
	for _, tc := range []struct {
		field string
		mod   func(*Service)
	}{
		{"Service.Protocol", func(s *Service) { s.Protocol = 99 }},
		{"Service.Addr", func(s *Service) { s.Addr = mustAddr("::ffff:198.18.0.1") }},
		{"Service.Addr", func(s *Service) { s.Addr = mustAddr("fe80::1%eth0") }},
		{"Service.Family", func(s *Service) { s.Family = IPv6 }},
		{"Service.Scheduler", func(s *Service) { s.Scheduler = "" }},
		{"Service.Scheduler", func(s *Service) { s.Scheduler = "sixteen-bytes-xx" }},
		{"Service.Scheduler", func(s *Service) { s.Scheduler = "r\x00r" }},
		{"Service.Scheduler", func(s *Service) { s.Scheduler = "r r" }},
		{"Service.Scheduler", func(s *Service) { s.Scheduler = "../rr" }},
		{"Service.Scheduler", func(s *Service) { s.Scheduler = "rr\n" }},
		{"Service.PersistenceEngine", func(s *Service) { s.PersistenceEngine = strings.Repeat("p", 16) }},
		{"Service.PersistenceEngine", func(s *Service) { s.PersistenceEngine = "s/p" }},
		{"Service.Port", func(s *Service) { s.Port = 0 }},
		{"Service.Port", func(s *Service) { s.Port, s.Protocol = 0, UDP }},
		{"Service.Port", func(s *Service) { s.Port, s.Protocol = 0, SCTP }},
		{"Service.SchedFlags", func(s *Service) { s.SchedFlags = 0x1 }},
		{"Service.Persistence.Timeout", func(s *Service) { s.Persistence.Timeout = 1500 * time.Millisecond }},
		{"Service.Persistence.Timeout", func(s *Service) { s.Persistence.Timeout = -time.Second }},
		{"Service.Persistence.PrefixLen", func(s *Service) { s.Persistence.PrefixLen = 24 }}, // not persistent
		{"Service.Persistence.PrefixLen", func(s *Service) { s.Persistence = Persistence{Timeout: time.Second, PrefixLen: 33} }},
		{"Service.Protocol", func(s *Service) { s.FWMark = 1 }},
		{"Service.Addr", func(s *Service) { s.FWMark, s.Protocol = 1, 0 }},
		{"Service.Family", func(s *Service) { *s = Service{FWMark: 1, Scheduler: "rr"} }},
	} {
		s := ok
		tc.mod(&s)
		err := validateService(s)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field || !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%+v: err = %v, want a ValidationError on %s", s, err, tc.field)
		}
	}
	v6 := Service{Protocol: TCP, Addr: mustAddr("2001:db8::1"), Port: 80, Scheduler: "rr", Persistence: Persistence{Timeout: time.Second, PrefixLen: 128}}
	if err := validateService(v6); err != nil {
		t.Fatalf("IPv6 /128 persistence refused: %v", err)
	}
}

// A port-0 service matches every port: only a persistent one may (as
// ipvsadm insists). Module-name characters pass.
func TestValidateServicePortZero(t *testing.T) {
	for _, s := range []Service{
		{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 0, Scheduler: "rr", Persistence: Persistence{Timeout: 300 * time.Second}},
		{Protocol: UDP, Addr: mustAddr("2001:db8::1"), Port: 0, Scheduler: "my_sched-2", Persistence: Persistence{Timeout: time.Second}},
		{FWMark: 1, Family: IPv4, Scheduler: "none", PersistenceEngine: "sip"},
	} {
		if err := validateService(s); err != nil {
			t.Errorf("%+v refused: %v", s, err)
		}
	}
}

func TestValidateDest(t *testing.T) {
	k := ServiceKey{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80}
	ok := Destination{Addr: mustAddr("198.18.1.1"), Port: 80, Weight: 1}
	for _, d := range []Destination{
		ok,
		{Addr: mustAddr("2001:db8::1"), Forward: Tunnel, TunnelType: GUE, TunnelPort: 1, TunnelFlags: TunnelRemCsum}, // mixed family over a tunnel
		{Addr: mustAddr("198.18.1.1"), Forward: Tunnel, TunnelType: GRE, TunnelFlags: TunnelCsum},
		{Addr: mustAddr("198.18.1.1"), UpperThreshold: 10, LowerThreshold: 10},
	} {
		if err := validateDest(k, d); err != nil {
			t.Errorf("%+v refused: %v", d, err)
		}
	}
	for _, tc := range []struct {
		field string
		mod   func(*Destination)
	}{
		{"Destination.Addr", func(d *Destination) { d.Addr = mustAddr("2001:db8::1") }}, // mixed family, masq
		{"Destination.Addr", func(d *Destination) { d.Addr = mustAddr("::ffff:1.2.3.4") }},
		{"Destination.Family", func(d *Destination) { d.Family = IPv6 }},
		{"Destination.Forward", func(d *Destination) { d.Forward = 5 }},
		{"Destination.Weight", func(d *Destination) { d.Weight = 1 << 31 }},
		{"Destination.LowerThreshold", func(d *Destination) { d.LowerThreshold = 1 }},
		{"Destination.TunnelType", func(d *Destination) { d.TunnelType = GUE }}, // not a tunnel
		{"Destination.TunnelPort", func(d *Destination) { d.Forward, d.TunnelType = Tunnel, GUE }},
		{"Destination.TunnelPort", func(d *Destination) { d.Forward, d.TunnelType, d.TunnelPort = Tunnel, GRE, 5 }},
		{"Destination.TunnelPort", func(d *Destination) { d.Forward, d.TunnelPort = Tunnel, 5 }}, // ipip
		{"Destination.TunnelType", func(d *Destination) { d.Forward, d.TunnelType = Tunnel, 3 }},
		{"Destination.TunnelFlags", func(d *Destination) { d.Forward, d.TunnelType, d.TunnelFlags = Tunnel, GRE, TunnelRemCsum }},
		{"Destination.TunnelFlags", func(d *Destination) {
			d.Forward, d.TunnelType, d.TunnelPort, d.TunnelFlags = Tunnel, GUE, 1, TunnelCsum|TunnelRemCsum
		}},
	} {
		d := ok
		tc.mod(&d)
		var ve *ValidationError
		if err := validateDest(k, d); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("%+v: err = %v, want a ValidationError on %s", d, err, tc.field)
		}
	}
}

func TestValidateDaemonAndTimeouts(t *testing.T) {
	for _, tc := range []struct {
		field string
		d     Daemon
	}{
		{"Daemon.State", Daemon{Interface: "eth0"}},
		{"Daemon.Interface", Daemon{State: Master}},
		{"Daemon.Interface", Daemon{State: Master, Interface: strings.Repeat("i", 16)}},
		{"Daemon.Group", Daemon{State: Master, Interface: "eth0", Group: mustAddr("198.18.0.1")}},
	} {
		var ve *ValidationError
		if err := validateDaemon(tc.d); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("%+v: err = %v, want a ValidationError on %s", tc.d, err, tc.field)
		}
	}
	if err := validateDaemon(Daemon{State: Backup, Interface: "eth0", Group: mustAddr("ff02::81")}); err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	if err := validateTimeouts(Timeouts{UDP: -time.Second}); !errors.As(err, &ve) || ve.Field != "Timeouts.UDP" {
		t.Fatalf("negative UDP timeout: %v", err)
	}
}

func TestBatchKeepsFirstInvalidRequest(t *testing.T) {
	var b Batch
	b.AddService(Service{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80, Scheduler: "rr"})
	b.AddService(Service{Protocol: TCP, Addr: mustAddr("198.18.0.2"), Port: 80}) // no scheduler
	b.DeleteService(ServiceKey{Protocol: 1})                                     // invalid too, but second
	b.UpdateDestination(ServiceKey{Protocol: TCP, Addr: mustAddr("198.18.0.1"), Port: 80}, Destination{Addr: mustAddr("198.18.1.1"), Weight: 2})
	if b.Len() != 2 || b.Ops()[1].Kind != OpUpdateDestination || b.Ops()[1].Destination.Weight != 2 {
		t.Fatalf("ops = %+v", b.Ops())
	}
	err := b.Err()
	var e *Error
	var ve *ValidationError
	if !errors.As(err, &e) || e.Op != "add service" || e.Object != "tcp 198.18.0.2:80" || !errors.As(err, &ve) || ve.Field != "Service.Scheduler" {
		t.Fatalf("Err() = %v", err)
	}
	if !strings.Contains(err.Error(), "batch request 1") {
		t.Fatalf("Err() does not name the request: %v", err)
	}
}

func TestErrorIs(t *testing.T) {
	if err := error(&Error{Op: "delete service", Err: syscall.ESRCH}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("ESRCH does not match fs.ErrNotExist")
	}
	if err := error(&Error{Op: "add service", Err: syscall.EEXIST}); !errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist) {
		t.Fatal("EEXIST mismatched")
	}
	be := &BatchError{Total: 3, Failed: []FailedOp{{Index: 1, Err: &Error{Op: "add destination", Err: syscall.ENOENT}}}}
	if !errors.Is(be, fs.ErrNotExist) || !strings.Contains(be.Error(), "1 of 3 requests failed; first (#1)") {
		t.Fatalf("BatchError: %v", be)
	}
}

func TestStrings(t *testing.T) {
	for got, want := range map[string]string{
		ServiceKey{Protocol: SCTP, Addr: mustAddr("2001:db8::1"), Port: 9}.String(): "sctp [2001:db8::1]:9",
		ServiceKey{FWMark: 3, Family: IPv4}.String():                                "fwmark 3 (IPv4)",
		(SHFallback | SchedFlag3).String():                                          "flag-1,flag-3",
		(TunnelCsum).String():                                                       "csum",
		TunnelFlags(0).String():                                                     "nocsum",
		DirectRoute.String():                                                        "route",
		GUE.String():                                                                "gue",
		Backup.String():                                                             "backup",
		Version(0x010201).String():                                                  "1.2.1",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
