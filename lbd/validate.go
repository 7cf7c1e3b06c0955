package lbd

import (
	"errors"
	"regexp"
	"strings"

	"github.com/ipvskit/ipvskit/proxier"
)

// validate checks what the form does not: that each real server's check
// has a port, and the State the configuration makes (every real server up
// and the sorry server beside them), whose problems it names by the
// file's paths and lines.
func (c *Config) validate() []proxier.Problem {
	var probs []proxier.Problem
	paths := map[string]string{}
	s := &proxier.State{Services: map[string]proxier.Service{}}
	for _, name := range c.names() {
		vs := c.VirtualServers[name]
		sp, cp := key("services", name), key("virtualServers", name)
		svc := vs.frame()
		for i, rs := range vs.RealServers {
			rp := index(join(cp, "realServers"), i)
			svc.Endpoints = append(svc.Endpoints, vs.endpoint(rs, false))
			paths[index(join(sp, "endpoints"), i)] = rp
			if ck := vs.checkOf(rs); ck.Type != CheckNone && ck.Port == 0 && rs.Port == 0 && vs.Port == 0 {
				probs = append(probs, c.problem(join(rp, "healthCheck.port"), "", "is missing: a firewall-mark real server's check needs a port"))
			}
		}
		if vs.Sorry != nil {
			paths[index(join(sp, "endpoints"), len(vs.RealServers))] = join(cp, "sorryServer")
			svc.Endpoints = append(svc.Endpoints, vs.endpoint(vs.Sorry, false))
		}
		s.Services[name] = *svc
		paths[sp] = cp
		paths[join(sp, "clusterIPs")] = join(cp, "address")
		paths[join(sp, "sessionAffinity")] = join(cp, "persistence")
		paths[join(sp, "schedulerFlags")] = join(cp, "scheduler")
		if vs.FirewallMark == 0 {
			paths[join(sp, "ports[0].port")] = join(cp, "port")
			paths[join(sp, "ports[0]")] = join(cp, "port")
		}
		paths[join(sp, "ports")] = join(cp, "ports")
	}
	pc := c.ProxierConfig()
	var cv *proxier.ValidationError
	if err := pc.Validate(); errors.As(err, &cv) {
		for _, p := range cv.Problems { // config.instance, config.syncDaemons[0].interface
			probs = append(probs, c.problem(strings.TrimPrefix(p.Path, "config."), p.Value, strings.ReplaceAll(p.Msg, "config.", "")))
		}
		return probs
	} else if err != nil {
		return append(probs, c.problem("instance", c.Instance, err.Error()))
	}
	var v *proxier.ValidationError
	if err := s.Validate(pc); errors.As(err, &v) {
		for _, p := range v.Problems {
			msg := statePath.ReplaceAllStringFunc(p.Msg, func(q string) string { return translate(q, paths) })
			probs = append(probs, c.problem(translate(p.Path, paths), p.Value, msg))
		}
	} else if err != nil {
		probs = append(probs, c.problem("document", "", err.Error()))
	}
	return probs
}

// checkOf is rs's health check: its own, its virtual server's, or none.
func (vs *VirtualServer) checkOf(rs *RealServer) *Check {
	switch {
	case rs.Check != nil:
		return rs.Check
	case vs.Check != nil:
		return vs.Check
	}
	return &Check{Type: CheckNone}
}

// problem is a problem at a file's path, on the line of the nearest value
// the file gives at or above it.
func (c *Config) problem(path, value, msg string) proxier.Problem {
	p := proxier.Problem{Path: path, Value: value, Msg: msg}
	for q := path; q != ""; q = parent(q) {
		if l, ok := c.lines[q]; ok {
			p.Line = l
			break
		}
	}
	return p
}

// statePath matches a State path in a problem's message.
var statePath = regexp.MustCompile(`services\["[^"]*"\](\.[a-zA-Z0-9]+(\[[^\]]*\])?)*`)

// translate names a State path by the file's: the longest prefix paths
// knows, and the field names that differ after it.
func translate(path string, paths map[string]string) string {
	for q := path; q != ""; q = parent(q) {
		if cp, ok := paths[q]; ok {
			rest := path[len(q):]
			for _, r := range [][2]string{{".addr", ".address"}, {".quiesced", ".weight"}, {".sessionAffinity", ".persistence"}, {".flags", ".checksum"}} {
				rest = strings.Replace(rest, r[0], r[1], 1)
			}
			if i := strings.Index(rest, ".ports["); i >= 0 {
				rest = rest[:i] + ".port"
			}
			return cp + rest
		}
	}
	return path
}

// parent is the path one step up: a["x"].b[2] -> a["x"].b -> a["x"] -> a.
func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i <= 0 {
		return ""
	}
	if path[i] == '[' && strings.HasSuffix(path, "]") {
		if j := strings.LastIndex(path[:len(path)-1], "\""); j > i {
			// a key in quotes may hold . or [
			if k := strings.LastIndex(path[:j], "[\""); k >= 0 {
				return path[:k]
			}
		}
	}
	return path[:i]
}
