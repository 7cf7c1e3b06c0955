package healthcheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// The DNS message format (RFC 1035 section 4), as much as a health check
// needs: a query with one question, and a response's header.

const (
	dnsHeaderLen = 12
	dnsClassIN   = 1
	dnsFlagQR    = 1 << 15 // a response
	dnsFlagRD    = 1 << 8  // recursion desired
)

// dnsType returns the query type a mnemonic names ("" is A).
func dnsType(s string) (uint16, bool) {
	switch strings.ToUpper(s) {
	case "", "A":
		return 1, true
	case "NS":
		return 2, true
	case "CNAME":
		return 5, true
	case "SOA":
		return 6, true
	case "PTR":
		return 12, true
	case "MX":
		return 15, true
	case "TXT":
		return 16, true
	case "AAAA":
		return 28, true
	case "SRV":
		return 33, true
	case "ANY":
		return 255, true
	}
	return 0, false
}

// appendQuestion appends the question section for name (in presentation
// form) and qtype, class IN, or says why name is not a name.
func appendQuestion(b []byte, name string, qtype uint16) ([]byte, error) {
	if name == "" {
		return b, errors.New("want a name (\".\" for the root)")
	}
	if len(name) > 254 || (len(name) == 254 && name[253] != '.') {
		return b, errors.New("longer than 253 bytes")
	}
	name = strings.TrimSuffix(name, ".")
	if name != "" {
		for _, label := range strings.Split(name, ".") {
			if label == "" {
				return b, errors.New("an empty label")
			}
			if len(label) > 63 {
				return b, fmt.Errorf("label %q longer than 63 bytes", label)
			}
			for i := 0; i < len(label); i++ {
				if c := label[i]; !isLabelByte(c) {
					return b, fmt.Errorf("label %q has %q: want letters, digits, '-' and '_'", label, c)
				}
			}
			b = append(b, byte(len(label)))
			b = append(b, label...)
		}
	}
	b = append(b, 0)
	b = binary.BigEndian.AppendUint16(b, qtype)
	return binary.BigEndian.AppendUint16(b, dnsClassIN), nil
}

func isLabelByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// appendQuery appends a whole query message: a header with id and one
// question.
func appendQuery(b []byte, id uint16, question []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, id)
	b = binary.BigEndian.AppendUint16(b, dnsFlagRD)
	b = binary.BigEndian.AppendUint16(b, 1) // QDCOUNT
	b = append(b, 0, 0, 0, 0, 0, 0)         // AN, NS, AR counts
	return append(b, question...)
}

// dnsReply is what a check reads from a response.
type dnsReply struct {
	id       uint16
	response bool
	rcode    int
	question []byte // the echoed question section, if the reply has one
}

// parseReply reads a message's header and its first question, which a
// response to our query repeats.
func parseReply(msg []byte) (dnsReply, error) {
	if len(msg) < dnsHeaderLen {
		return dnsReply{}, fmt.Errorf("DNS message of %d bytes: shorter than a header", len(msg))
	}
	flags := binary.BigEndian.Uint16(msg[2:])
	r := dnsReply{id: binary.BigEndian.Uint16(msg), response: flags&dnsFlagQR != 0, rcode: int(flags & 0xf)}
	if binary.BigEndian.Uint16(msg[4:]) == 0 {
		return r, nil
	}
	q := msg[dnsHeaderLen:]
	i := 0
	for i < len(q) && q[i] != 0 {
		if q[i]&0xc0 != 0 { // a compressed name: not in a question we sent
			return r, errors.New("DNS question with a compressed name")
		}
		i += int(q[i]) + 1
	}
	if i+5 > len(q) {
		return r, errors.New("DNS question cut short")
	}
	r.question = q[:i+5]
	return r, nil
}
