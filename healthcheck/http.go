package healthcheck

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// maxBody bounds how much of a body is read for a match.
const maxBody = 1 << 20

// checkHTTP sends one GET (over TLS for HTTPS) on a new connection and
// checks the status and, if asked, the body.
func (c *checkerCore) checkHTTP(ctx context.Context, p *probe, addr netip.AddrPort) error {
	conn, err := c.dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := deadlineFromContext(ctx, conn)
	defer stop()
	host := p.host
	if host == "" {
		host = addr.String() // [v6]:port for IPv6
	}
	if p.Type == HTTPS {
		tc := tls.Client(conn, tlsConfig(p, host))
		if err := tc.HandshakeContext(ctx); err != nil {
			return ctxErr(ctx, fmt.Errorf("TLS handshake: %w", err))
		}
		conn = tc
	}
	req := make([]byte, 0, len(p.request)+len(host)+4)
	req = append(append(append(req, p.request...), host...), "\r\n\r\n"...)
	if _, err := conn.Write(req); err != nil {
		return ctxErr(ctx, err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), nil)
	if err != nil {
		return ctxErr(ctx, fmt.Errorf("reading the response: %w", err))
	}
	defer resp.Body.Close()
	if !statusOK(p.HTTP.Status, resp.StatusCode) {
		return fmt.Errorf("HTTP status %d, want %s: %w", resp.StatusCode, wantStatus(p.HTTP.Status), ErrMismatch)
	}
	if p.HTTP.Body == "" && p.bodyRE == nil {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return ctxErr(ctx, fmt.Errorf("reading the body: %w", err))
	}
	if p.HTTP.Body != "" && !bytes.Contains(body, []byte(p.HTTP.Body)) {
		return fmt.Errorf("body has no %q: %w", p.HTTP.Body, ErrMismatch)
	}
	if p.bodyRE != nil && !p.bodyRE.Match(body) {
		return fmt.Errorf("body does not match %q: %w", p.HTTP.BodyRegexp, ErrMismatch)
	}
	return nil
}

func tlsConfig(p *probe, host string) *tls.Config {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	return &tls.Config{
		ServerName:         strings.Trim(name, "[]"),
		InsecureSkipVerify: p.HTTP.InsecureSkipVerify, //nolint:gosec // the caller's explicit choice
		RootCAs:            p.HTTP.RootCAs,
	}
}

func statusOK(want []int, got int) bool {
	if len(want) == 0 {
		return got == http.StatusOK
	}
	return slices.Contains(want, got)
}

func wantStatus(want []int) string {
	if len(want) == 0 {
		return "200"
	}
	return strings.Trim(fmt.Sprint(want), "[]")
}
