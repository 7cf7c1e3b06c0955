package proxier

import (
	"encoding/json"
	"testing"

	"github.com/ipvskit/ipvskit/internal/linkcheck"
)

// FuzzValidate holds validation to its promise, "validate first, then
// touch": a Config and State it accepts (as Go's JSON encoding of them)
// never fail in a lower layer. Every request of the plan a first sync would
// send is valid for package ipvs, every VIP for package dummy, every ruleset
// for package iptables (with the options the Config gives), and the plan
// renders. Whatever the input, nothing panics.
func FuzzValidate(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(fuzzValidate)
}

// fuzzSeeds: three valid inputs, then two with names the kernel or the
// rules would refuse.
var fuzzSeeds = []string{
	`{"Config":{},"State":{"Services":{"web":{"ClusterIPs":["198.18.100.1"],"Ports":[{"Name":"http","Protocol":"TCP","Port":80,"TargetPort":8080}],"Endpoints":[{"Addr":"198.18.1.1","Ready":true}]}}}}`,
	`{"Config":{"Instance":"lb-a","Families":["IPv4","IPv6"],"LocalDetector":{"InterfacePrefix":"veth"}},"State":{"Node":{"Addresses":["198.18.0.10","2001:db8::10"]},"Services":{"np":{"ClusterIPs":["2001:db8:100::1"],"Ports":[{"Name":"dns","Protocol":"UDP","Port":53,"NodePort":30053}],"ExternalTrafficPolicy":1,"HealthCheckNodePort":30100,"Endpoints":[{"Addr":"2001:db8:1::1","Ready":true,"Local":true}]}}}}`,
	`{"Config":{"LocalDetector":{"ClusterCIDRs":["198.19.0.0/16"]},"MasqueradeAll":true},"State":{"Services":{"lb":{"ClusterIPs":["198.18.100.2"],"LoadBalancerIPs":["198.18.103.1"],"LoadBalancerSourceRanges":["198.18.20.0/24"],"ExternalIPs":["198.18.102.1"],"Scheduler":"sh","SchedulerFlags":8,"SessionAffinity":{"Timeout":600000000000},"Ports":[{"Name":"s","Protocol":"SCTP","Port":9,"TargetPort":9}],"Endpoints":[{"Addr":"198.18.1.2","Serving":true,"Terminating":true}]}}}}`,
	`{"Config":{"LinkName":"vip\u0000"},"State":{}}`,
	`{"Config":{"LocalDetector":{"Interface":"veth+"}},"State":{}}`,
}

// The valid seeds are valid, so the fuzzer starts from the paths that
// reach the lower layers.
func TestFuzzSeedsAreValid(t *testing.T) {
	for i, seed := range fuzzSeeds[:3] {
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
