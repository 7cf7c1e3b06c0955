package proxier

import (
	"encoding/json"
	"testing"

	"github.com/ipvskit/ipvskit/internal/linkcheck"
)

// FuzzValidate holds validation to its promise, "validate first, then
// touch": a Config and State it accepts (the Config as Go's JSON encoding
// of it, the State in its text form) never fail in a lower layer. Every
// request of the plan a first sync would send is valid for package ipvs,
// every VIP for package dummy, every ruleset for package iptables (with the
// options the Config gives), and the plan renders. Whatever the input,
// nothing panics.
func FuzzValidate(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(fuzzValidate)
}

// fuzzSeeds: five valid inputs (the fifth serves a node address as an
// external IP), then three the validation refuses: names
// the kernel or the rules would refuse, a VIP inside an excluded CIDR.
var fuzzSeeds = []string{
	`{"Config":{},"State":{"services":{"web":{"clusterIPs":["198.18.100.1"],"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080}],"endpoints":[{"addr":"198.18.1.1","ready":true}]}}}}`,
	`{"Config":{"Instance":"lb-a","Families":["IPv4","IPv6"],"LocalDetector":{"InterfacePrefix":"veth"}},"State":{"node":{"addresses":["198.18.0.10","2001:db8::10"]},"services":{"np":{"clusterIPs":["2001:db8:100::1"],"ports":[{"name":"dns","protocol":"UDP","port":53,"nodePort":30053}],"externalTrafficPolicy":"Local","healthCheckNodePort":30100,"endpoints":[{"addr":"2001:db8:1::1","ready":true,"local":true}]}}}}`,
	`{"Config":{"LocalDetector":{"ClusterCIDRs":["198.19.0.0/16"]},"MasqueradeAll":true},"State":{"services":{"lb":{"clusterIPs":["198.18.100.2"],"loadBalancerIPs":["198.18.103.1"],"loadBalancerSourceRanges":["198.18.20.0/24"],"externalIPs":["198.18.102.1"],"scheduler":"sh","schedulerFlags":["sh-fallback"],"sessionAffinity":{"timeout":"10m"},"ports":[{"name":"s","protocol":"SCTP","port":9,"targetPort":9}],"endpoints":[{"addr":"198.18.1.2","serving":true,"terminating":true}]}}}}`,
	`{"Config":{"ExcludeCIDRs":["198.18.9.0/24","2001:db8:9::/48"]},"State":{"node":{"addresses":["198.18.9.10","198.18.0.10"]},"services":{"np":{"clusterIPs":["198.18.100.3"],"ports":[{"name":"http","protocol":"TCP","port":80,"nodePort":30080}],"endpoints":[{"addr":"198.18.1.1","ready":true}]}}}}`,
	`{"Config":{},"State":{"node":{"addresses":["198.18.0.10"]},"services":{"ext":{"clusterIPs":["198.18.100.4"],"externalIPs":["198.18.0.10"],"ports":[{"name":"http","protocol":"TCP","port":80,"nodePort":30080}],"endpoints":[{"addr":"198.18.1.1","ready":true}]}}}}`,
	`{"Config":{"LinkName":"vip\u0000"},"State":{}}`,
	`{"Config":{"ExcludeCIDRs":["198.18.100.0/24"]},"State":{"services":{"web":{"clusterIPs":["198.18.100.1"],"ports":[{"protocol":"TCP","port":80}]}}}}`,
	`{"Config":{"LocalDetector":{"Interface":"veth+"}},"State":{}}`,
}

// The valid seeds are valid, so the fuzzer starts from the paths that
// reach the lower layers.
func TestFuzzSeedsAreValid(t *testing.T) {
	for i, seed := range fuzzSeeds[:5] {
		var in struct {
			Config Config
			State  State
		}
		if err := json.Unmarshal([]byte(seed), &in); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if err := in.Config.Validate(); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if err := in.State.Validate(&in.Config); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
}

func fuzzValidate(t *testing.T, data []byte) {
	var in struct {
		Config Config
		State  State
	}
	if json.Unmarshal(data, &in) != nil {
		return
	}
	c, s := &in.Config, &in.State
	if c.Validate() != nil {
		return
	}
	c.Observer, c.Logger = nil, nil
	if s.Validate(c) != nil {
		return
	}
	want := compute(s, c)
	pl := makePlan(nil, want)
	if err := pl.IPVSAdd.Err(); err != nil {
		t.Fatalf("a valid State gives an invalid IPVS request: %v\n%s", err, data)
	}
	for _, a := range pl.Bind {
		if reason := linkcheck.VIP(a); reason != "" {
			t.Fatalf("a valid State gives a VIP the link refuses (%s): %v\n%s", reason, a, data)
		}
	}
	for f, r := range want.rules {
		if err := r.Validate(); err != nil {
			t.Fatalf("a valid Config and State give an invalid %v ruleset: %v\n%s", f, err, data)
		}
	}
	if _, err := pl.render("ipvskit0"); err != nil {
		t.Fatalf("the plan of a valid State does not render: %v\n%s", err, data)
	}
}
