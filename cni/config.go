package cni

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// NetConf is the plugin's stanza of a network configuration list: the
// CNI's common keys (cniVersion, name, type, prevResult, ...) and the
// plugin's own. Each field's zero value is documented.
type NetConf struct {
	types.PluginConf
	// Services are the VIPs to serve inside the container's namespace;
	// at least one.
	Services []ServiceConf `json:"services"`
	// Backend is the netfilter back end: "nftables" (empty, the default)
	// or "iptables".
	Backend string `json:"backend,omitempty"`
	// VIPMode is how the VIPs are made the namespace's own: "addresses"
	// (empty, the default: bound on the VIP link) or "local-routes".
	VIPMode string `json:"vipMode,omitempty"`
	// Instance names the plugin's objects in the namespace (the VIP link
	// "<instance>0", the nft table "<instance>"); empty means "ipvskit".
	Instance string `json:"instance,omitempty"`
}

// ServiceConf is one VIP:port and the backends it balances over.
type ServiceConf struct {
	// Name identifies the service in errors and plans; empty means
	// "<vip>:<port>/<protocol>". Names are unique.
	Name string `json:"name,omitempty"`
	// VIP is the service's virtual IP (IPv4 or IPv6).
	VIP string `json:"vip"`
	// Port is the port on the VIP, 1-65535.
	Port int `json:"port"`
	// Protocol is "tcp" (empty, the default), "udp" or "sctp", in any case.
	Protocol string `json:"protocol,omitempty"`
	// TargetPort is the backends' port; 0 means Port.
	TargetPort int `json:"targetPort,omitempty"`
	// Backends are the backends' addresses, of the VIP's family. An empty
	// list makes a VIP that refuses connections.
	Backends []string `json:"backends"`
	// Scheduler is the IPVS scheduler ("rr", "wrr", "lc", "sh", "mh", ...);
	// empty means "rr".
	Scheduler string `json:"scheduler,omitempty"`
}

// Parse reads the plugin's stanza from a CNI command's standard input,
// with its prevResult if the runtime passed one. A stanza that is not JSON
// of the right shape is a *types.Error with code types.ErrDecodingFailure;
// one with an unknown key in a service, or a bad value anywhere, one with
// types.ErrInvalidNetworkConfig listing every problem with its path
// (services[0].vip) and value. Values are checked as the proxier would:
// NetConf.State and ProxierConfig then succeed.
func Parse(stdin []byte) (*NetConf, error) {
	var raw struct {
		Services []json.RawMessage `json:"services"`
	}
	if err := json.Unmarshal(stdin, &raw); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "ipvskit: decoding the configuration: "+err.Error(), "")
	}
	conf := &NetConf{}
	if err := json.Unmarshal(stdin, conf); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "ipvskit: decoding the configuration: "+err.Error(), "")
	}
	var p problems
	for i, s := range raw.Services {
		// A misspelt key ("backend" for "backends") would silently mean
		// no backends: refused.
		d := json.NewDecoder(bytes.NewReader(s))
		d.DisallowUnknownFields()
		if err := d.Decode(&ServiceConf{}); err != nil {
			p.add(fmt.Sprintf("services[%d]", i), "", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if err := version.ParsePrevResult(&conf.PluginConf); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "ipvskit: decoding prevResult: "+err.Error(), "")
	}
	if err := conf.check(); err != nil {
		return nil, err
	}
	return conf, nil
}

// check checks every value, then the State and Config they map to as the
// proxier validates them.
func (c *NetConf) check() error {
	var p problems
	if len(c.Services) == 0 {
		p.add("services", "", "at least one service is required")
	}
	if _, err := c.backend(); err != nil {
		p.add("backend", c.Backend, err.Error())
	}
	if _, err := c.vipMode(); err != nil {
		p.add("vipMode", c.VIPMode, err.Error())
	}
	names := map[string]int{}
	for i := range c.Services {
		s := &c.Services[i]
		path := fmt.Sprintf("services[%d]", i)
		s.check(path, &p)
		if j, dup := names[s.id()]; dup {
			p.add(path+".name", s.id(), fmt.Sprintf("names services[%d] too", j))
		}
		names[s.id()] = i
	}
	if err := p.err(); err != nil {
		return err
	}
	cfg := c.proxierConfig()
	err := cfg.Validate()
	if err == nil {
		err = c.state().Validate(cfg)
	}
	if err != nil {
		return types.NewError(types.ErrInvalidNetworkConfig, "ipvskit: invalid configuration: "+err.Error(), "")
	}
	return nil
}

// check adds s's bad values to p, under path.
func (s *ServiceConf) check(path string, p *problems) {
	vip, err := netip.ParseAddr(s.VIP)
	switch {
	case err != nil:
		p.add(path+".vip", s.VIP, "is not an IP address")
	case vip.Zone() != "":
		p.add(path+".vip", s.VIP, "has a zone")
	}
	if s.Port < 1 || s.Port > 65535 {
		p.add(path+".port", fmt.Sprint(s.Port), "is out of range 1-65535")
	}
	if s.TargetPort < 0 || s.TargetPort > 65535 {
		p.add(path+".targetPort", fmt.Sprint(s.TargetPort), "is out of range 0-65535 (0: the port)")
	}
	if _, err := s.protocol(); err != nil {
		p.add(path+".protocol", s.Protocol, err.Error())
	}
	for j, b := range s.Backends {
		a, err := netip.ParseAddr(b)
		bp := fmt.Sprintf("%s.backends[%d]", path, j)
		switch {
		case err != nil:
			p.add(bp, b, "is not an IP address")
		case a.Zone() != "":
			p.add(bp, b, "has a zone")
		case vip.IsValid() && a.Is4() != vip.Is4():
			p.add(bp, b, "is not of the VIP's family")
		}
	}
}

// problems collects bad values, each with its path.
type problems []string

func (p *problems) add(path, value, msg string) {
	if value != "" {
		msg = fmt.Sprintf("%q %s", value, msg)
	}
	*p = append(*p, path+": "+msg)
}

// err is a *types.Error with code types.ErrInvalidNetworkConfig listing
// every problem, or nil.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return types.NewError(types.ErrInvalidNetworkConfig, "ipvskit: invalid configuration: "+strings.Join(p, "; "), "")
}
