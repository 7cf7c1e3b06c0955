package lbd

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

// Load reads a configuration file's contents and checks it whole: its
// form here, and the State it makes with State.Validate. Every problem
// is reported, as one *proxier.ValidationError whose problems name the
// file's paths (virtualServers["web"].realServers[1].weight) and lines.
func Load(data []byte) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &proxier.ValidationError{Problems: []proxier.Problem{{Path: "document", Msg: err.Error()}}}
	}
	r := &reader{lines: map[string]int{}}
	c := &Config{VirtualServers: map[string]*VirtualServer{}, lines: r.lines}
	if len(doc.Content) == 0 {
		r.add("document", nil, "is empty")
	} else {
		r.config(c, doc.Content[0])
	}
	if len(r.problems) == 0 {
		r.problems = c.validate()
	}
	if len(r.problems) > 0 {
		return nil, &proxier.ValidationError{Problems: r.problems}
	}
	return c, nil
}

func (r *reader) config(c *Config, n *yaml.Node) {
	f := r.fields("", n, "instance", "syncDaemons", "virtualServers")
	c.Instance = r.str("instance", f["instance"])
	if f["syncDaemons"] != nil {
		for i, dn := range r.list("syncDaemons", f["syncDaemons"]) {
			c.SyncDaemons = append(c.SyncDaemons, r.syncDaemon(index("syncDaemons", i), dn))
		}
	}
	if f["virtualServers"] == nil {
		r.add("virtualServers", n, "is missing")
		return
	}
	names, vals := r.entries("virtualServers", f["virtualServers"])
	for i, name := range names {
		p := key("virtualServers", name)
		if c.VirtualServers[name] != nil {
			r.add(p, vals[i], "is given twice")
			continue
		}
		c.VirtualServers[name] = r.virtualServer(p, vals[i])
	}
}

func (r *reader) virtualServer(path string, n *yaml.Node) *VirtualServer {
	f := r.fields(path, n, "address", "port", "ports", "protocol", "firewallMark", "scheduler",
		"persistence", "forward", "tunnel", "onePacket", "healthCheck", "sorryServer", "realServers")
	vs := &VirtualServer{
		Address:      r.addr(join(path, "address"), f["address"]),
		Port:         r.num(join(path, "port"), f["port"], 65535),
		FirewallMark: uint32(r.integer(join(path, "firewallMark"), f["firewallMark"], 0, 1<<32-1)),
		Scheduler:    r.str(join(path, "scheduler"), f["scheduler"]),
		OnePacket:    r.boolean(join(path, "onePacket"), f["onePacket"]),
	}
	if f["address"] == nil && n.Kind == yaml.MappingNode {
		r.add(join(path, "address"), n, "is missing")
	}
	switch r.word(join(path, "protocol"), f["protocol"], "tcp", "tcp", "udp", "sctp") {
	case "tcp":
		vs.Protocol = proxier.TCP
	case "udp":
		vs.Protocol = proxier.UDP
	case "sctp":
		vs.Protocol = proxier.SCTP
	}
	if f["ports"] != nil {
		for i, pn := range r.list(join(path, "ports"), f["ports"]) {
			vs.Ports = append(vs.Ports, r.num(index(join(path, "ports"), i), pn, 65535))
		}
	}
	r.portsOf(path, n, vs, f)
	if f["persistence"] != nil {
		vs.Persistence = r.persistence(join(path, "persistence"), f["persistence"])
	}
	switch r.word(join(path, "forward"), f["forward"], "masquerade", "masquerade", "NAT", "direct-route", "DR", "tunnel", "TUN") {
	case "direct-route", "DR":
		vs.Forward = ipvs.DirectRoute
	case "tunnel", "TUN":
		vs.Forward = ipvs.Tunnel
	}
	if f["tunnel"] != nil {
		vs.Tunnel = r.tunnel(join(path, "tunnel"), f["tunnel"])
	}
	if f["healthCheck"] != nil {
		vs.Check = r.check(join(path, "healthCheck"), f["healthCheck"])
	}
	if f["sorryServer"] != nil {
		vs.Sorry = r.realServer(join(path, "sorryServer"), f["sorryServer"], false)
	}
	if f["realServers"] != nil {
		for i, rn := range r.list(join(path, "realServers"), f["realServers"]) {
			vs.RealServers = append(vs.RealServers, r.realServer(index(join(path, "realServers"), i), rn, true))
		}
	}
	return vs
}

// portsOf checks that a virtual server has a port, or a firewall mark
// and ports.
func (r *reader) portsOf(path string, n *yaml.Node, vs *VirtualServer, f map[string]*yaml.Node) {
	switch {
	case f["ports"] != nil && vs.FirewallMark == 0:
		r.add(join(path, "ports"), f["ports"], "is for a firewall-mark virtual server (give port)")
	case f["ports"] != nil && f["port"] != nil:
		r.add(join(path, "port"), f["port"], "is given with ports (give one)")
	case f["ports"] == nil && f["port"] == nil && n.Kind == yaml.MappingNode:
		r.add(join(path, "port"), n, "is missing")
	case f["ports"] == nil && vs.Port != 0:
		vs.Ports = []int{vs.Port}
	}
}

func (r *reader) persistence(path string, n *yaml.Node) *proxier.SessionAffinity {
	f := r.fields(path, n, "timeout", "ipv4PrefixLen", "ipv6PrefixLen")
	return &proxier.SessionAffinity{
		Timeout:       r.duration(join(path, "timeout"), f["timeout"]),
		IPv4PrefixLen: r.num(join(path, "ipv4PrefixLen"), f["ipv4PrefixLen"], 32),
		IPv6PrefixLen: r.num(join(path, "ipv6PrefixLen"), f["ipv6PrefixLen"], 128),
	}
}

func (r *reader) tunnel(path string, n *yaml.Node) proxier.Tunnel {
	f := r.fields(path, n, "type", "port", "checksum")
	t := proxier.Tunnel{Port: r.num(join(path, "port"), f["port"], 65535)}
	switch r.word(join(path, "type"), f["type"], "ipip", "ipip", "gue", "gre") {
	case "gue":
		t.Type = ipvs.GUE
	case "gre":
		t.Type = ipvs.GRE
	}
	switch r.word(join(path, "checksum"), f["checksum"], "none", "none", "csum", "remcsum") {
	case "csum":
		t.Flags = ipvs.TunnelCsum
	case "remcsum":
		t.Flags = ipvs.TunnelRemCsum
	}
	return t
}

func (r *reader) realServer(path string, n *yaml.Node, real bool) *RealServer {
	names := []string{"address", "port"}
	if real {
		names = append(names, "weight", "upperThreshold", "lowerThreshold", "inhibitOnFailure", "healthCheck")
	}
	f := r.fields(path, n, names...)
	rs := &RealServer{
		Address:          r.addr(join(path, "address"), f["address"]),
		Port:             r.num(join(path, "port"), f["port"], 65535),
		Weight:           1,
		UpperThreshold:   int(r.integer(join(path, "upperThreshold"), f["upperThreshold"], 0, proxier.MaxThreshold)),
		LowerThreshold:   int(r.integer(join(path, "lowerThreshold"), f["lowerThreshold"], 0, proxier.MaxThreshold)),
		InhibitOnFailure: r.boolean(join(path, "inhibitOnFailure"), f["inhibitOnFailure"]),
	}
	if f["address"] == nil && n.Kind == yaml.MappingNode {
		r.add(join(path, "address"), n, "is missing")
	}
	if f["weight"] != nil {
		rs.Weight = r.num(join(path, "weight"), f["weight"], proxier.MaxWeight)
	}
	if f["healthCheck"] != nil {
		rs.Check = r.check(join(path, "healthCheck"), f["healthCheck"])
	}
	return rs
}

// errString is the text of a load error, every problem on a line of its
// own (the form the daemon logs and -check prints).
func errString(err error) string {
	var v *proxier.ValidationError
	if !errors.As(err, &v) {
		return err.Error()
	}
	s := fmt.Sprintf("%d problems:", len(v.Problems))
	if len(v.Problems) == 1 {
		s = "1 problem:"
	}
	for _, p := range v.Problems {
		s += "\n  " + p.String()
	}
	return s
}

// syncDaemon reads one connection-sync daemon; its values are checked with
// the Proxier's Config.
func (r *reader) syncDaemon(path string, n *yaml.Node) proxier.SyncDaemon {
	f := r.fields(path, n, "state", "interface", "syncID", "group", "port", "ttl", "maxLen")
	d := proxier.SyncDaemon{
		Interface: r.str(join(path, "interface"), f["interface"]),
		SyncID:    uint32(r.integer(join(path, "syncID"), f["syncID"], 0, 255)),
		Port:      uint16(r.num(join(path, "port"), f["port"], 65535)),
		TTL:       uint8(r.integer(join(path, "ttl"), f["ttl"], 0, 255)),
		MaxLen:    uint16(r.num(join(path, "maxLen"), f["maxLen"], 65535)),
	}
	if f["group"] != nil {
		d.Group = r.addr(join(path, "group"), f["group"])
	}
	switch r.word(join(path, "state"), f["state"], "", "master", "backup") {
	case "master":
		d.State = ipvs.Master
	case "backup":
		d.State = ipvs.Backup
	}
	for _, k := range []string{"state", "interface"} {
		if f[k] == nil && n.Kind == yaml.MappingNode {
			r.add(join(path, k), n, "is missing")
		}
	}
	return d
}
