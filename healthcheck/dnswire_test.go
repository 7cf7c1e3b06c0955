package healthcheck

import (
	"bytes"
	"strings"
	"testing"
)

func TestAppendQuestion(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []byte // nil: refused
	}{
		{"example.com", []byte("\x07example\x03com\x00\x00\x01\x00\x01")},
		{"example.com.", []byte("\x07example\x03com\x00\x00\x01\x00\x01")},
		{".", []byte("\x00\x00\x01\x00\x01")},
		{"_sip._tcp.example", []byte("\x04_sip\x04_tcp\x07example\x00\x00\x01\x00\x01")},
		{"", nil},
		{"a..b", nil},
		{".a", nil},
		{"a b", nil},
		{"ex/ample", nil},
		{strings.Repeat("a", 64), nil},
		{strings.Repeat("a", 63), append(append([]byte{63}, strings.Repeat("a", 63)...), 0, 0, 1, 0, 1)},
		{strings.Repeat("abc.", 63) + "a", nil},  // 253 bytes: fine
		{strings.Repeat("abc.", 63) + "ab", nil}, // 254 bytes: too long
	} {
		got, err := appendQuestion(nil, tc.name, 1)
		switch {
		case tc.want == nil && len(tc.name) == 253:
			if err != nil {
				t.Errorf("%q (253 bytes): %v", tc.name, err)
			}
		case tc.want == nil && err == nil:
			t.Errorf("%q: accepted as %q, want refused", tc.name, got)
		case tc.want != nil && (err != nil || !bytes.Equal(got, tc.want)):
			t.Errorf("%q: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestQueryAndReply(t *testing.T) {
	q, err := appendQuestion(nil, "example.com", 28)
	if err != nil {
		t.Fatal(err)
	}
	msg := appendQuery(nil, 0xbeef, q)
	want := append([]byte("\xbe\xef\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"), q...)
	if !bytes.Equal(msg, want) {
		t.Fatalf("query %q, want %q", msg, want)
	}
	r, err := parseReply(msg)
	if err != nil || r.id != 0xbeef || r.response || r.rcode != 0 || !bytes.Equal(r.question, q) {
		t.Errorf("parseReply(query) = %+v, %v", r, err)
	}
	msg[2] |= 0x80
	msg[3] |= 3
	r, err = parseReply(msg)
	if err != nil || !r.response || r.rcode != 3 {
		t.Errorf("parseReply(NXDOMAIN response) = %+v, %v", r, err)
	}
	for _, bad := range [][]byte{msg[:11], msg[:15], append(msg[:12:12], 0xc0, 0x0c, 0, 1, 0, 1)} {
		if _, err := parseReply(bad); err == nil {
			t.Errorf("parseReply(%q) accepted", bad)
		}
	}
}

func FuzzParseReply(f *testing.F) {
	q, _ := appendQuestion(nil, "example.com", 1)
	f.Add(appendQuery(nil, 1, q))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		r, err := parseReply(msg)
		if err == nil && r.question != nil && len(r.question) > len(msg) {
			t.Fatalf("question longer than the message")
		}
	})
}
