package ipvsadm

import (
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"
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
		if s, err := UnmarshalSnapshot([]byte(text)); err == nil {
			out, err := MarshalSnapshot(s)
			if err != nil {
				t.Fatalf("parsed snapshot does not render: %v", err)
			}
			s2, err := UnmarshalSnapshot(out)
			if err != nil {
				t.Fatalf("rendered snapshot does not parse: %v\n%s", err, out)
			}
			out2, err := MarshalSnapshot(s2)
			if err != nil || string(out2) != string(out) {
				t.Fatalf("snapshot text not stable (%v):\n%s", err, lineDiff(string(out), string(out2)))
			}
		}
		var b ipvs.Batch
		if err := UnmarshalBatch([]byte(text), &b); err == nil {
			out, err := MarshalBatch(&b)
			if err != nil {
				t.Fatalf("parsed batch does not render: %v", err)
			}
			var b2 ipvs.Batch
			if err := UnmarshalBatch(out, &b2); err != nil {
				t.Fatalf("rendered batch does not parse: %v\n%s", err, out)
			}
			out2, err := MarshalBatch(&b2)
			if err != nil || string(out2) != string(out) {
				t.Fatalf("batch text not stable (%v):\n%s", err, lineDiff(string(out), string(out2)))
			}
		}
	})
}
