package ipvsadm

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipvs"
)

// textTable is a table touching every option of the text form, in no
// particular order: Save must sort it as ipvsadm does.
func textTable() ipvs.Snapshot {
	a := netip.MustParseAddr
	web := ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.0.1"), Port: 80, Scheduler: "rr"}
	v6 := ipvs.Service{Protocol: ipvs.TCP, Addr: a("2001:db8::1"), Port: 443, Scheduler: "sh", SchedFlags: ipvs.SHFallback | ipvs.SHPort,
		Persistence: ipvs.Persistence{Timeout: 120 * time.Second, PrefixLen: 64}}
	dns := ipvs.Service{Protocol: ipvs.UDP, Addr: a("198.18.0.1"), Port: 53, Scheduler: "wlc", OnePacket: true}
	sip := ipvs.Service{Protocol: ipvs.UDP, Addr: a("198.18.0.2"), Port: 5060, Scheduler: "rr",
		Persistence: ipvs.Persistence{Timeout: 300 * time.Second}, PersistenceEngine: "sip"}
	sctp := ipvs.Service{Protocol: ipvs.SCTP, Addr: a("198.18.0.3"), Port: 9, Scheduler: "mh", SchedFlags: ipvs.MHPort}
	all := ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.0.4"), Port: 0, Scheduler: "wrr",
		Persistence: ipvs.Persistence{Timeout: 60 * time.Second, PrefixLen: 24}}
	fw := ipvs.Service{FWMark: 7, Family: ipvs.IPv6, Scheduler: "dh"}
	fw4 := ipvs.Service{FWMark: 3, Family: ipvs.IPv4, Scheduler: "lc", SchedFlags: ipvs.SchedFlag3}
	d := func(addr string, port uint16, fwd ipvs.ForwardMethod, w uint32) ipvs.DestinationInfo {
		return ipvs.DestinationInfo{Destination: ipvs.Destination{Addr: a(addr), Port: port, Forward: fwd, Weight: w}}
	}
	gue := d("198.18.1.9", 80, ipvs.Tunnel, 2)
	gue.TunnelType, gue.TunnelPort, gue.TunnelFlags = ipvs.GUE, 6080, ipvs.TunnelCsum
	gre := d("198.18.1.8", 80, ipvs.Tunnel, 3)
	gre.TunnelType, gre.TunnelFlags = ipvs.GRE, ipvs.TunnelNoCsum
	thr := d("198.18.1.3", 8080, ipvs.Masq, 5)
	thr.UpperThreshold, thr.LowerThreshold = 100, 50
	return ipvs.Snapshot{Services: []ipvs.ServiceSnapshot{
		{ServiceInfo: ipvs.ServiceInfo{Service: fw}, Destinations: []ipvs.DestinationInfo{d("2001:db8::7", 0, ipvs.DirectRoute, 1)}},
		{ServiceInfo: ipvs.ServiceInfo{Service: v6}, Destinations: []ipvs.DestinationInfo{
			d("2001:db8::20", 443, ipvs.Masq, 1), d("2001:db8::3", 443, ipvs.Masq, 0), d("198.18.1.7", 443, ipvs.Tunnel, 1)}},
		{ServiceInfo: ipvs.ServiceInfo{Service: web}, Destinations: []ipvs.DestinationInfo{
			thr, d("198.18.1.1", 8080, ipvs.Masq, 1), gue, gre, d("198.18.1.1", 80, ipvs.DirectRoute, 65535)}},
		{ServiceInfo: ipvs.ServiceInfo{Service: dns}},
		{ServiceInfo: ipvs.ServiceInfo{Service: fw4}},
		{ServiceInfo: ipvs.ServiceInfo{Service: all}},
		{ServiceInfo: ipvs.ServiceInfo{Service: sctp}},
		{ServiceInfo: ipvs.ServiceInfo{Service: sip}},
	}}
}

// What ipvsadm 1.31 -Sn prints for textTable (sorted by fwmark, family,
// protocol, address, port; destinations by address, port).
const textTableSave = `-A -t 198.18.0.1:80 -s rr
-a -t 198.18.0.1:80 -r 198.18.1.1:80 -g -w 65535
-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1
-a -t 198.18.0.1:80 -r 198.18.1.3:8080 -m -w 5
-a -t 198.18.0.1:80 -r 198.18.1.8:80 -i -w 3 --tun-type gre --tun-nocsum
-a -t 198.18.0.1:80 -r 198.18.1.9:80 -i -w 2 --tun-type gue --tun-port 6080 --tun-csum
-A -t 198.18.0.4:0 -s wrr -p 60 -M 255.255.255.0
-A -u 198.18.0.1:53 -s wlc -o
-A -u 198.18.0.2:5060 -s rr -p 300 --pe sip
-A --sctp-service 198.18.0.3:9 -s mh -b mh-port
-A -t [2001:db8::1]:443 -s sh -p 120 -M 64 -b sh-fallback,sh-port
-a -t [2001:db8::1]:443 -r 198.18.1.7:443 -i -w 1 --tun-type ipip
-a -t [2001:db8::1]:443 -r [2001:db8::3]:443 -m -w 0
-a -t [2001:db8::1]:443 -r [2001:db8::20]:443 -m -w 1
-A -f 3 -s lc -b flag-3
-A -f 7 -6 -s dh
-a -f 7 -6 -r [2001:db8::7]:0 -g -w 1
`

func TestSnapshotSaveText(t *testing.T) {
	got, err := Save(textTable())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != textTableSave {
		t.Fatalf("SaveText (-want +got):\n%s", lineDiff(textTableSave, string(got)))
	}
	// MarshalSnapshot is the same plus the thresholds.
	got, err = MarshalSnapshot(textTable())
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(textTableSave, "198.18.1.3:8080 -m -w 5", "198.18.1.3:8080 -m -w 5 -x 100 -y 50", 1)
	if string(got) != want {
		t.Fatalf("MarshalBatch (-want +got):\n%s", lineDiff(want, string(got)))
	}
}

func TestSnapshotTextRoundTrip(t *testing.T) {
	text, err := MarshalSnapshot(textTable())
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalSnapshot(text)
	if err != nil {
		t.Fatal(err)
	}
	again, err := MarshalSnapshot(back)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(text) {
		t.Fatalf("marshal(unmarshal(text)) (-want +got):\n%s", lineDiff(string(text), string(again)))
	}
	// Field by field: every service and destination comes back as it was,
	// with the family filled in.
	want := map[ipvs.ServiceKey]ipvs.ServiceSnapshot{}
	for _, s := range textTable().Services {
		want[s.Key()] = s
	}
	for _, s := range back.Services {
		w, ok := want[s.Key()]
		if !ok {
			t.Fatalf("unexpected service %v", s.Key())
		}
		ws := w.Service
		ws.Family = ws.Key().Family
		if s.Service != ws {
			t.Errorf("service:\n got %+v\nwant %+v", s.Service, ws)
		}
		wd := map[ipvs.DestinationKey]ipvs.Destination{}
		for _, d := range w.Destinations {
			d.Family = destFamily(d.Destination)
			wd[d.Key()] = d.Destination
		}
		if len(s.Destinations) != len(wd) {
			t.Errorf("service %v: %d destinations, want %d", s.Key(), len(s.Destinations), len(wd))
		}
		for _, d := range s.Destinations {
			if d.Destination != wd[d.Key()] {
				t.Errorf("destination of %v:\n got %+v\nwant %+v", s.Key(), d.Destination, wd[d.Key()])
			}
		}
	}
}

func TestSnapshotUnmarshalTextErrors(t *testing.T) {
	for _, c := range []struct {
		text  string
		line  int
		field string
	}{
		{"-A -t 198.18.0.1:80 -s rr\n-a -t 198.18.0.2:80 -r 198.18.1.1:80 -m\n", 2, "service-address"},
		{"-A -t 198.18.0.1:80 -s rr\n\n-A -t 198.18.0.1:80 -s wrr\n", 3, "service-address"},
		{"-A -t 198.18.0.1:80 -s rr\n-a -t 198.18.0.1:80 -r 198.18.1.1:80 -m\n-a -t 198.18.0.1:80 -r 198.18.1.1:80 -g\n", 3, "real-server"},
		{"# saved\n-E -t 198.18.0.1:80 -s rr\n", 2, ""},
		{"-A -t 198.18.0.1:80 -s rr -p 10 -M 255.0.255.0\n", 1, "netmask"},
		{"-A -t 198.18.0.1:80 -s rr\n-a -t 198.18.0.1:80 -r 198.18.1.1:80 -m -w 70000 -x 1 -y 2\n", 2, ""},
		{"-A -t 198.18.0.1:80 -s rr\n-a -t 198.18.0.1:80 -r 198.18.1.1:80 -m -w nine\n", 2, "weight"},
	} {
		_, err := UnmarshalSnapshot([]byte(c.text))
		var te *TextError
		if !errors.As(err, &te) || !errors.Is(err, ErrText) {
			t.Errorf("%q: want a *TextError wrapping ErrText, got %v", c.text, err)
			continue
		}
		if te.Line != c.line || te.Field != c.field {
			t.Errorf("%q: line %d field %q, want line %d field %q (%v)", c.text, te.Line, te.Field, c.line, c.field, err)
		}
		if !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: error %q does not name the line", c.text, err)
		}
	}
}

func TestBatchTextRoundTrip(t *testing.T) {
	a := netip.MustParseAddr
	web := ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.0.1"), Port: 80, Scheduler: "rr"}
	fw := ipvs.Service{FWMark: 9, Family: ipvs.IPv4, Scheduler: "wlc", Persistence: ipvs.Persistence{Timeout: 30 * time.Second}}
	var b ipvs.Batch
	b.AddService(web)
	b.AddDestination(web.Key(), ipvs.Destination{Addr: a("198.18.1.1"), Port: 8080, Forward: ipvs.Masq, Weight: 3,
		UpperThreshold: 10, LowerThreshold: 5})
	b.UpdateDestination(web.Key(), ipvs.Destination{Addr: a("198.18.1.1"), Port: 8080, Forward: ipvs.Masq, Weight: 7})
	b.AddService(fw)
	b.AddDestination(fw.Key(), ipvs.Destination{Addr: a("198.18.1.2"), Forward: ipvs.DirectRoute, Weight: 1})
	b.UpdateService(ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.0.1"), Port: 80, Scheduler: "wrr"})
	b.DeleteDestination(web.Key(), ipvs.DestinationKey{Addr: a("198.18.1.1"), Port: 8080})
	b.DeleteService(fw.Key())
	want := `-A -t 198.18.0.1:80 -s rr
-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 3 -x 10 -y 5
-e -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 7
-A -f 9 -s wlc -p 30
-a -f 9 -r 198.18.1.2:0 -g -w 1
-E -t 198.18.0.1:80 -s wrr
-d -t 198.18.0.1:80 -r 198.18.1.1:8080
-D -f 9
`
	got, err := MarshalBatch(&b)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("MarshalBatch (-want +got):\n%s", lineDiff(want, string(got)))
	}
	var back ipvs.Batch
	if err := UnmarshalBatch(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.Len() != b.Len() {
		t.Fatalf("%d requests back, want %d", back.Len(), b.Len())
	}
	for i, op := range back.Ops() {
		w := b.Ops()[i]
		w.Service.Family = w.Service.Key().Family
		if w.Kind != ipvs.OpDeleteDestination && w.Kind != ipvs.OpDeleteService {
			w.Destination.Family = destFamily(w.Destination)
		}
		if w.Kind == ipvs.OpAddService || w.Kind == ipvs.OpUpdateService {
			// service lines carry the whole service
		} else {
			k := w.Service.Key()
			w.Service = ipvs.Service{Family: k.Family, Protocol: k.Protocol, Addr: k.Addr, Port: k.Port, FWMark: k.FWMark}
		}
		if !reflect.DeepEqual(op, w) {
			t.Errorf("request %d:\n got %+v\nwant %+v", i, op, w)
		}
	}
}

func TestBatchUnmarshalTextLeavesBatchOnError(t *testing.T) {
	var b ipvs.Batch
	b.AddService(ipvs.Service{Protocol: ipvs.TCP, Addr: netip.MustParseAddr("198.18.0.1"), Port: 80, Scheduler: "rr"})
	err := UnmarshalBatch([]byte("ipvsadm -A -t 198.18.0.2:80\n-a -t 198.18.0.2:80 -r 198.18.1.1 -m -x 1 -y 9\n"), &b)
	var te *TextError
	if !errors.As(err, &te) || te.Line != 2 {
		t.Fatalf("want a *TextError on line 2, got %v", err)
	}
	var ve *ipvs.ValidationError
	if !errors.As(err, &ve) || ve.Field != "Destination.LowerThreshold" {
		t.Fatalf("want the ValidationError naming Destination.LowerThreshold inside, got %v", err)
	}
	if b.Len() != 1 || b.Err() != nil {
		t.Fatalf("batch changed on error: %d requests, err %v", b.Len(), b.Err())
	}
}

// lineDiff shows two texts line by line, marking lines that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl == gl {
			b.WriteString("  " + wl + "\n")
			continue
		}
		b.WriteString("- " + wl + "\n+ " + gl + "\n")
	}
	return b.String()
}

// destFamily is d's family as the kernel reports it: Family, or else the
// address's.
func destFamily(d ipvs.Destination) ipvs.Family {
	if d.Family != 0 {
		return d.Family
	}
	return inet.FamilyOf(d.Addr)
}
