package healthcheck

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
)

// checkDNS sends one query over UDP and waits for the response with the
// same ID and question; a response with another RCODE is ErrMismatch.
// Unrelated datagrams are skipped until the deadline.
func (c *checkerCore) checkDNS(ctx context.Context, p *probe, addr netip.AddrPort) error {
	conn, err := c.dial(ctx, "udp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := deadlineFromContext(ctx, conn)
	defer stop()
	id := uint16(rand.Uint32())
	if _, err := conn.Write(appendQuery(make([]byte, 0, dnsHeaderLen+len(p.question)), id, p.question)); err != nil {
		return ctxErr(ctx, err)
	}
	buf := make([]byte, 1232) // the EDNS-era safe UDP payload; a longer answer is truncated, its header read
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return ctxErr(ctx, err)
		}
		r, err := parseReply(buf[:n])
		if err != nil || !r.response || r.id != id || (r.question != nil && !bytes.EqualFold(r.question, p.question)) {
			continue
		}
		if r.rcode != p.DNS.RCode {
			return fmt.Errorf("DNS rcode %s, want %s: %w", rcodeName(r.rcode), rcodeName(p.DNS.RCode), ErrMismatch)
		}
		return nil
	}
}

func rcodeName(r int) string {
	names := [...]string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"}
	if r >= 0 && r < len(names) {
		return names[r]
	}
	return fmt.Sprintf("RCODE%d", r)
}
