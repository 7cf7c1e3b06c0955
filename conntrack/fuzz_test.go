package conntrack

import "testing"

// FuzzDecodeEntry: no input panics the decoder, and what it accepts makes a
// delete request that decodes to the same original tuple.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(f, flow(UDP, "198.18.20.2:40000", "198.18.100.1:53", "198.18.11.2:5353"), 9, 0))
	f.Add(encodeEntry(f, flow(SCTP, "[2001:db8:20::2]:1", "[2001:db8:100::1]:2", "[2001:db8:11::2]:3"), 9, 3))
	f.Add([]byte{2, 0, 0, 0, 4, 0, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := decodeEntry(data)
		if err != nil {
			return
		}
		m := deleteRequest(&e)
		got, err := decodeEntryTuplesOnly(m.Data)
		if err != nil || got != e.flow.Original {
			t.Fatalf("delete request of %v decodes to %v, %v", e.flow, got, err)
		}
	})
}
