package ipvsadm

import (
	"errors"
	"strings"
	"testing"
)

// Lines as ipvsadm -Sn prints them (ipvsadm 1.31's print_service_entry and
// print_tunnel_rule): parsing then formatting each must give it back.
var ipvsadmSaveLines = []string{
	"-A -t 198.18.0.1:80 -s rr",
	"-A -u 198.18.0.1:53 -s wlc -o",
	"-A --sctp-service 198.18.0.2:9 -s lc",
	"-A -t 198.18.0.3:443 -s wrr -p 300",
	"-A -t 198.18.0.3:0 -s wrr -p 60 -M 255.255.255.0",
	"-A -t [2001:db8::1]:80 -s sh -p 120 -M 64 -b sh-fallback,sh-port",
	"-A -t 198.18.0.4:80 -s mh -b mh-port",
	"-A -t 198.18.0.4:81 -s rr -b flag-1,flag-3",
	"-A -u 198.18.0.5:5060 -s rr -p 300 --pe sip",
	"-A -f 1 -s rr",
	"-A -f 4294967295 -6 -s dh",
	"-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1",
	"-a -t 198.18.0.1:80 -r 198.18.1.2:80 -g -w 0",
	"-a -t 198.18.0.1:80 -r 198.18.1.3:80 -i -w 5 --tun-type ipip",
	"-a -t 198.18.0.1:80 -r 198.18.1.4:80 -i -w 2 --tun-type gue --tun-port 6080 --tun-csum",
	"-a -t 198.18.0.1:80 -r 198.18.1.5:80 -i -w 2 --tun-type gue --tun-port 6081 --tun-nocsum",
	"-a -t 198.18.0.1:80 -r 198.18.1.6:80 -i -w 2 --tun-type gue --tun-port 6082 --tun-remcsum",
	"-a -t 198.18.0.1:80 -r 198.18.1.7:80 -i -w 3 --tun-type gre --tun-csum",
	"-a -t [2001:db8::1]:80 -r [2001:db8::2]:8080 -m -w 65535",
	"-a -t [2001:db8::1]:80 -r 198.18.1.8:80 -i -w 1 --tun-type ipip",
	"-a -f 1 -r 198.18.1.9:0 -m -w 1",
	"-a -f 4294967295 -6 -r [2001:db8::3]:0 -g -w 1",
}

func TestTextLineRoundTrip(t *testing.T) {
	for _, in := range ipvsadmSaveLines {
		l, err := parseTextLine(strings.Fields(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := l.format(false); got != in {
			t.Errorf("round trip:\n in: %s\ngot: %s", in, got)
		}
	}
}

func TestTextLineDefaultsAndAliases(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// ipvsadm's defaults: scheduler wlc, persistence 300 s, route, weight 1.
		{"-A -t 198.18.0.1:80", "-A -t 198.18.0.1:80 -s wlc"},
		{"-A -t 198.18.0.1:0 -p", "-A -t 198.18.0.1:0 -s wlc -p 300"},
		{"-A -t 198.18.0.1:0 -p -s rr", "-A -t 198.18.0.1:0 -s rr -p 300"},
		{"-A -t 198.18.0.1:80 -p 10 -M 255.255.255.255", "-A -t 198.18.0.1:80 -s wlc -p 10"},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1", "-a -t 198.18.0.1:80 -r 198.18.1.1:80 -g -w 1"},
		// Route and tunnel take the service's port whatever -r says.
		{"-a -t 198.18.0.1:80 -r 198.18.1.1:81 -g", "-a -t 198.18.0.1:80 -r 198.18.1.1:80 -g -w 1"},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1 -m", "-a -t 198.18.0.1:80 -r 198.18.1.1:80 -m -w 1"},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1 -i", "-a -t 198.18.0.1:80 -r 198.18.1.1:80 -i -w 1 --tun-type ipip"},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1 -i --tun-type gre", "-a -t 198.18.0.1:80 -r 198.18.1.1:80 -i -w 1 --tun-type gre --tun-nocsum"},
		{"ipvsadm --add-server --tcp-service=198.18.0.1:80 --real-server 198.18.1.1:90 --masquerading --weight=7 -x 10 -y 5",
			"-a -t 198.18.0.1:80 -r 198.18.1.1:90 -m -w 7"},
		{"--delete-server -u 198.18.0.1:53 -r 198.18.1.1:53", "-d -u 198.18.0.1:53 -r 198.18.1.1:53"},
		{"-D -f 7 -6", "-D -f 7 -6"},
		{"-E -t [2001:db8::1]:80 -s rr -p 30", "-E -t [2001:db8::1]:80 -s rr -p 30"},
	} {
		fields := strings.Fields(c.in)
		if fields[0] == "ipvsadm" {
			fields = fields[1:]
		}
		l, err := parseTextLine(fields)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := l.format(false); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestTextLineThresholds(t *testing.T) {
	l, err := parseTextLine(strings.Fields("-a -t 198.18.0.1:80 -r 198.18.1.1:80 -m -w 2 -x 100 -y 50"))
	if err != nil {
		t.Fatal(err)
	}
	if l.uthresh != 100 || l.lthresh != 50 {
		t.Fatalf("thresholds %d/%d, want 100/50", l.uthresh, l.lthresh)
	}
	if got, want := l.format(true), "-a -t 198.18.0.1:80 -r 198.18.1.1:80 -m -w 2 -x 100 -y 50"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got, want := l.format(false), "-a -t 198.18.0.1:80 -r 198.18.1.1:80 -m -w 2"; got != want {
		t.Fatalf("ipvsadm -Sn omits thresholds: got %s, want %s", got, want)
	}
}

func TestTextLineErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ in, field, value string }{
		{"-A -t 198.18.0.1:80 -s", "scheduler", ""},
		{"-A -t 198.18.0.1:http", "tcp-service", "198.18.0.1:http"},
		{"-A -t example.com:80", "tcp-service", "example.com:80"},
		{"-A -t 2001:db8::1:80", "service-address", "[2001:db8::1:80]:0"},
		{"-A -t 198.18.0.1:0", "service-address", "198.18.0.1:0"},
		{"-A -t 198.18.0.1:80 -s rr -s wrr", "scheduler", ""},
		{"-A -t 198.18.0.1:80 -o", "ops", ""},
		{"-A -t 198.18.0.1:80 -p 0", "persistent", "0"},
		{"-A -t 198.18.0.1:80 -p 10 -M 24", "netmask", "24"},
		{"-A -t [2001:db8::1]:80 -p 10 -M 129", "netmask", "129"},
		{"-A -t 198.18.0.1:80 -s rr -b sh-port", "sched-flags", "sh-port"},
		{"-A -t 198.18.0.1:80 -b bogus", "sched-flags", "bogus"},
		{"-A -t 198.18.0.1:80 -w 1", "weight", ""},
		{"-A -f 0", "fwmark-service", "0"},
		{"-A -6 -f 1", "ipv6", ""},
		{"-a -t 198.18.0.1:80", "real-server", ""},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1 -w -1", "weight", "-1"},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1 -w x", "weight", "x"},
		{"-a -t 198.18.0.1:80 -r [2001:db8::2]:80 -m", "real-server", "[2001:db8::2]:80"},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1 -m --tun-type gue", "forwarding-method", ""},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1 -i --tun-type gue", "tun-port", ""},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1 -i --tun-type vxlan", "tun-type", "vxlan"},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1 -i --tun-type gre --tun-remcsum", "tun-type", "gre"},
		{"-a -t 198.18.0.1:80 -r 198.18.1.1 -i --tun-csum --tun-nocsum", "tun-nocsum", ""},
		{"-D -t 198.18.0.1:80 -s rr -p 10", "persistent", ""}, // the first of two, by name
		{"-L -n", "", "-L"},
		{"-t 198.18.0.1:80", "", ""},
	} {
		_, err := parseTextLine(strings.Fields(c.in))
		var te *TextError
		if !errors.As(err, &te) || !errors.Is(err, ErrText) {
			t.Errorf("%q: want a *TextError wrapping ErrText, got %v", c.in, err)
			continue
		}
		if te.Field != c.field || te.Value != c.value {
			t.Errorf("%q: field %q value %q, want field %q value %q (%v)", c.in, te.Field, te.Value, c.field, c.value, err)
		}
	}
}

// ipvsadm text and Names are one implementation: flag-3 of an sh or mh
// service is written beside the named flags, so the line reads back whole.
func TestTextSchedFlagsUseNames(t *testing.T) {
	for _, in := range []string{
		"-A -t 198.18.0.4:82 -s sh -b sh-fallback,flag-3",
		"-A -t 198.18.0.4:83 -s mh -b flag-3",
	} {
		l, err := parseTextLine(strings.Fields(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := l.format(false); got != in {
			t.Errorf("%q formats as %q", in, got)
		}
	}
}
