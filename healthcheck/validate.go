package healthcheck

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// probe is a validated Check, ready to run: everything that can be computed
// once per Set is.
type probe struct {
	Check
	timeout  time.Duration
	bodyRE   *regexp.Regexp
	request  []byte // HTTP(S): the whole request, but for the Host line's value
	host     string // HTTP(S): Host header ("" = the address)
	question []byte // DNS: the question section
}

// prepare validates c for addr-less use and returns it ready to run. The
// refusals name fields under r's prefix.
func prepare(c Check, r *refusals) *probe {
	p := &probe{Check: c, timeout: c.Timeout}
	if c.Type < TCP || c.Type > Func {
		r.add("Type", c.Type.String(), "want one of tcp, http, https, dns, func")
	}
	dur := func(field string, d time.Duration, ok bool, reason string) {
		if !ok {
			r.add(field, d.String(), reason)
		}
	}
	dur("Interval", c.Interval, c.Interval > 0, "want more than 0")
	dur("Timeout", c.Timeout, c.Timeout >= 0 && (c.Interval <= 0 || c.Timeout <= c.Interval),
		"want from 0 (= Interval) to Interval ("+c.Interval.String()+")")
	dur("Jitter", c.Jitter, c.Jitter >= 0 && (c.Interval <= 0 || c.Jitter < c.Interval),
		"want from 0 to less than Interval ("+c.Interval.String()+")")
	dur("RetryInterval", c.RetryInterval, c.RetryInterval >= 0, "want 0 (= Interval) or more")
	if c.Rise < 1 {
		r.add("Rise", strconv.Itoa(c.Rise), "want 1 or more")
	}
	if c.Fall < 1 {
		r.add("Fall", strconv.Itoa(c.Fall), "want 1 or more")
	}
	if p.timeout == 0 {
		p.timeout = c.Interval
	}
	switch c.Type {
	case HTTP, HTTPS:
		p.prepareHTTP(r)
	case DNS:
		p.prepareDNS(r)
	case Func:
		if c.Func == nil {
			r.add("Func", "", "a func check needs a function")
		}
	}
	return p
}

func (p *probe) prepareHTTP(r *refusals) {
	h := p.HTTP
	path := h.Path
	if path == "" {
		path = "/"
	}
	if u, err := url.ParseRequestURI(path); err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(path, "/") || !printable(path) {
		r.add("HTTP.Path", h.Path, "want an absolute path with an optional query, printable ASCII without spaces, such as /healthz?full=1")
	}
	if h.Host != "" && (!printable(h.Host) || strings.ContainsAny(h.Host, "/?#@")) {
		r.add("HTTP.Host", h.Host, "want a host name or address, with an optional :port")
	}
	for i, s := range h.Status {
		if s < 100 || s > 999 {
			r.add("HTTP.Status["+strconv.Itoa(i)+"]", strconv.Itoa(s), "want an HTTP status, 100 to 999")
		}
	}
	if h.BodyRegexp != "" {
		re, err := regexp.Compile(h.BodyRegexp)
		if err != nil {
			r.add("HTTP.BodyRegexp", h.BodyRegexp, err.Error())
		}
		p.bodyRE = re
	}
	p.host = h.Host
	p.request = []byte("GET " + path + " HTTP/1.1\r\nUser-Agent: ipvskit-healthcheck\r\nConnection: close\r\nAccept: */*\r\nHost: ")
}

// printable reports whether s has only printable ASCII and no space, as a
// request line's target and a Host header must.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func (p *probe) prepareDNS(r *refusals) {
	d := p.DNS
	qtype, ok := dnsType(d.Type)
	if !ok {
		r.add("DNS.Type", d.Type, "want one of A, NS, CNAME, SOA, PTR, MX, TXT, AAAA, SRV, ANY")
	}
	q, err := appendQuestion(nil, d.Name, qtype)
	if err != nil {
		r.add("DNS.Name", d.Name, err.Error())
	}
	if d.RCode < 0 || d.RCode > 15 {
		r.add("DNS.RCode", strconv.Itoa(d.RCode), "want a DNS response code, 0 to 15")
	}
	p.question = q
}
