package lbd

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// check reads a health check and checks its values (see checkForm), and
// holds one that passed to the checker's own rules as a backstop: a check
// this reader passed is one the checker takes.
func (r *reader) check(path string, n *yaml.Node) *Check {
	before := len(r.problems)
	c := r.checkForm(path, n)
	if len(r.problems) == before && c.Type != CheckNone {
		if err := c.healthcheck().Validate(); err != nil {
			r.add(path, n, "is refused by the health checker: %v", err)
		}
	}
	return c
}

// checkForm reads a health check and checks its values by the file's
// keys: timing within the interval, the fields its type uses and no
// others.
func (r *reader) checkForm(path string, n *yaml.Node) *Check {
	f := r.fields(path, n, "type", "port", "interval", "timeout", "jitter", "retryInterval", "rise", "fall",
		"path", "host", "status", "body", "insecureSkipVerify", "dnsName", "dnsType", "dnsRCode")
	c := &Check{
		Type:               CheckType(r.word(join(path, "type"), f["type"], "", string(CheckNone), string(CheckTCP), string(CheckHTTP), string(CheckHTTPS), string(CheckDNS))),
		Port:               r.num(join(path, "port"), f["port"], 65535),
		Interval:           r.duration(join(path, "interval"), f["interval"]),
		Timeout:            r.duration(join(path, "timeout"), f["timeout"]),
		Jitter:             r.duration(join(path, "jitter"), f["jitter"]),
		RetryInterval:      r.duration(join(path, "retryInterval"), f["retryInterval"]),
		Rise:               int(r.integer(join(path, "rise"), f["rise"], 1, 1000)),
		Fall:               int(r.integer(join(path, "fall"), f["fall"], 1, 1000)),
		Path:               r.str(join(path, "path"), f["path"]),
		Host:               r.str(join(path, "host"), f["host"]),
		Body:               r.str(join(path, "body"), f["body"]),
		InsecureSkipVerify: r.boolean(join(path, "insecureSkipVerify"), f["insecureSkipVerify"]),
		DNSName:            r.str(join(path, "dnsName"), f["dnsName"]),
		DNSType:            r.word(join(path, "dnsType"), f["dnsType"], "", "A", "NS", "CNAME", "SOA", "PTR", "MX", "TXT", "AAAA", "SRV", "ANY"),
		DNSRCode:           r.num(join(path, "dnsRCode"), f["dnsRCode"], 15),
	}
	if f["status"] != nil {
		for i, s := range r.list(join(path, "status"), f["status"]) {
			c.Status = append(c.Status, int(r.integer(index(join(path, "status"), i), s, 100, 599)))
		}
	}
	if f["type"] == nil && n.Kind == yaml.MappingNode {
		r.add(join(path, "type"), n, "is missing (tcp, http, https, dns or none)")
	}
	c.defaults()
	if c.Timeout > c.Interval {
		r.add(join(path, "timeout"), f["timeout"], "is longer than the interval (%v)", c.Interval)
	}
	if c.Jitter >= c.Interval {
		r.add(join(path, "jitter"), f["jitter"], "is not less than the interval (%v)", c.Interval)
	}
	web := c.Type == CheckHTTP || c.Type == CheckHTTPS
	for _, k := range []string{"path", "host", "status", "body", "insecureSkipVerify"} {
		if f[k] != nil && !web {
			r.add(join(path, k), f[k], "is for http and https checks")
		}
	}
	if f["insecureSkipVerify"] != nil && c.Type == CheckHTTP {
		r.add(join(path, "insecureSkipVerify"), f["insecureSkipVerify"], "is for https checks")
	}
	if c.Path != "" && c.Path[0] != '/' {
		r.add(join(path, "path"), f["path"], "does not start with /")
	}
	for _, k := range []string{"path", "host"} {
		if s := r.str(join(path, k), f[k]); strings.ContainsFunc(s, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
			r.add(join(path, k), f[k], "has a space or a control character, which would break the request")
		}
	}
	for _, k := range []string{"dnsName", "dnsType", "dnsRCode"} {
		if f[k] != nil && c.Type != CheckDNS {
			r.add(join(path, k), f[k], "is for dns checks")
		}
	}
	if c.Type == CheckDNS && c.DNSName == "" && n.Kind == yaml.MappingNode {
		r.add(join(path, "dnsName"), n, "is missing (the name a dns check asks for)")
	}
	return c
}

// defaults fills in the zero timing fields.
func (c *Check) defaults() {
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Timeout == 0 {
		c.Timeout = c.Interval
	}
	if c.Rise == 0 {
		c.Rise = DefaultRise
	}
	if c.Fall == 0 {
		c.Fall = DefaultFall
	}
}
