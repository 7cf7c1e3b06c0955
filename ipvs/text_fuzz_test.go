package ipvs

import (
	"strings"
	"testing"
)

// FuzzParseText feeds arbitrary text to both parsers. Neither may panic, and
// whatever parses must render to text that parses back to the same text
// (render, parse, render is a fixed point).
func FuzzParseText(f *testing.F) {
	f.Add(textTableSave)
	f.Add(strings.Join(ipvsadmSaveLines, "\n"))
	f.Add("ipvsadm -A -t 198.18.0.1:0 -p\n-a -t 198.18.0.1:0 -r 198.18.1.1 -x 5 -y 1\n")
	f.Add("-E -f 1 -6 -s mh -b mh-fallback\n-e -f 1 -6 -r [2001:db8::1]:0 -i --tun-type gue --tun-port 1\n-d -f 1 -6 -r [2001:db8::1]:0\n-D -f 1 -6\n")
	f.Add("--add-service --udp-service=198.18.0.9:53 --ops --persistent=5 --netmask=255.255.0.0\n")
	f.Fuzz(func(t *testing.T, text string) {
		var s Snapshot
		if err := s.UnmarshalText([]byte(text)); err == nil {
			out, err := s.MarshalText()
			if err != nil {
				t.Fatalf("parsed snapshot does not render: %v", err)
			}
			var s2 Snapshot
			if err := s2.UnmarshalText(out); err != nil {
				t.Fatalf("rendered snapshot does not parse: %v\n%s", err, out)
			}
			out2, err := s2.MarshalText()
			if err != nil || string(out2) != string(out) {
				t.Fatalf("snapshot text not stable (%v):\n%s", err, lineDiff(string(out), string(out2)))
			}
		}
		var b Batch
		if err := b.UnmarshalText([]byte(text)); err == nil {
			out, err := b.MarshalText()
			if err != nil {
				t.Fatalf("parsed batch does not render: %v", err)
			}
			var b2 Batch
			if err := b2.UnmarshalText(out); err != nil {
				t.Fatalf("rendered batch does not parse: %v\n%s", err, out)
			}
			out2, err := b2.MarshalText()
			if err != nil || string(out2) != string(out) {
				t.Fatalf("batch text not stable (%v):\n%s", err, lineDiff(string(out), string(out2)))
			}
		}
	})
}
