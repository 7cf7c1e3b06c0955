package healthcheck

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"
)

// dnsServer answers every query on a loopback UDP socket with the rcode
// answer returns for the query's question (the name's wire form and the
// type), or not at all when answer says so. Before the real answer it sends
// one with another ID, which a check must skip.
func dnsServer(t *testing.T, answer func(question []byte) (rcode int, reply bool)) *net.UDPConn {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			q, err := parseReply(buf[:n])
			if err != nil || q.response || q.question == nil {
				continue
			}
			rcode, ok := answer(q.question)
			if !ok {
				continue
			}
			msg := append([]byte(nil), buf[:dnsHeaderLen]...)
			binary.BigEndian.PutUint16(msg[2:], dnsFlagQR|uint16(rcode))
			msg = append(msg, q.question...)
			stray := append([]byte(nil), msg...)
			binary.BigEndian.PutUint16(stray, q.id+1)
			conn.WriteToUDP(stray, from)
			conn.WriteToUDP(msg, from)
		}
	}()
	return conn
}

// byName answers NOERROR for example.com's A record, NXDOMAIN otherwise.
func byName(question []byte) (int, bool) {
	want, _ := appendQuestion(nil, "example.com", 1)
	if string(question) == string(want) {
		return 0, true
	}
	return 3, true
}

func TestDNS(t *testing.T) {
	srv := dnsServer(t, byName)
	addr := addrOf(t, srv.LocalAddr())
	for _, tc := range []struct {
		name string
		d    DNSCheck
		want State
	}{
		{"noerror", DNSCheck{Name: "example.com."}, Up},
		{"type A by name", DNSCheck{Name: "example.com", Type: "a"}, Up},
		{"other type", DNSCheck{Name: "example.com", Type: "AAAA"}, Down},
		{"nxdomain wanted", DNSCheck{Name: "nope.example", RCode: 3}, Up},
		{"nxdomain", DNSCheck{Name: "nope.example"}, Down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := check(DNS, time.Second)
			ck.DNS = tc.d
			ev := first(t, addr, ck, tc.want)
			if tc.want == Down && !errors.Is(ev.Err, ErrMismatch) {
				t.Errorf("error %v: want ErrMismatch", ev.Err)
			}
		})
	}
}

func TestDNSNeverAnswers(t *testing.T) {
	srv := dnsServer(t, func([]byte) (int, bool) { return 0, false })
	ck := check(DNS, time.Second)
	ck.Timeout = 50 * time.Millisecond
	ck.DNS.Name = "example.com"
	ev := first(t, addrOf(t, srv.LocalAddr()), ck, Down)
	if !errors.Is(ev.Err, context.DeadlineExceeded) {
		t.Errorf("error %v: want context.DeadlineExceeded", ev.Err)
	}
}
