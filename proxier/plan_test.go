package proxier

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"
)

func kinds(b *ipvs.Batch) []string {
	var out []string
	for _, op := range b.Ops() {
		s := op.Kind.String() + " " + op.Service.Key().String()
		if op.Kind >= ipvs.OpAddDestination {
			s += " -> " + op.Destination.Key().String()
		}
		out = append(out, s)
	}
	return out
}

func oneService() State {
	return State{Services: map[string]Service{"web": {
		ClusterIPs: []netip.Addr{a("198.18.100.1")},
		Ports:      []Port{{Name: "http", Protocol: TCP, Port: 80, TargetPort: 8080}},
		Endpoints: []Endpoint{
			{Addr: a("198.18.1.1"), Ready: true},
			{Addr: a("198.18.1.2"), Ready: true},
		},
	}}}
}

func planFor(t *testing.T, have *desired, s State) (*Plan, *desired) {
	t.Helper()
	c := &Config{}
	if err := s.Validate(c); err != nil {
		t.Fatal(err)
	}
	want := compute(&s, c)
	return makePlan(have, want), want
}

func TestInitialPlanAddsEverythingThenBinds(t *testing.T) {
	p, _ := planFor(t, nil, oneService())
	got := strings.Join(kinds(&p.IPVSAdd), "\n")
	want := "add service tcp 198.18.100.1:80\n" +
		"add destination tcp 198.18.100.1:80 -> 198.18.1.1:8080\n" +
		"add destination tcp 198.18.100.1:80 -> 198.18.1.2:8080"
	if got != want {
		t.Errorf("adds:\n%s\nwant:\n%s", got, want)
	}
	if len(p.Bind) != 1 || p.Bind[0] != a("198.18.100.1") || p.IPVSDelete.Len() != 0 || len(p.Unbind) != 0 {
		t.Errorf("plan %+v", p)
	}
	text, err := p.render("ipvskit0")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"-A -t 198.18.100.1:80 -s rr",
		"-a -t 198.18.100.1:80 -r 198.18.1.1:8080 -m -w 1",
		"ip addr add 198.18.100.1/32 dev ipvskit0",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("rendered plan lacks %q:\n%s", line, text)
		}
	}
	if strings.Index(text, "-A -t") > strings.Index(text, "ip addr add") {
		t.Errorf("VIPs must come after the virtual servers:\n%s", text)
	}
}

func TestUnchangedStatePlansNothing(t *testing.T) {
	_, applied := planFor(t, nil, oneService())
	p, _ := planFor(t, applied, oneService())
	if !p.Empty() {
		t.Fatalf("no-op sync plans work: %+v", p)
	}
}

func TestOneEndpointChangeIsOneRequest(t *testing.T) {
	_, applied := planFor(t, nil, oneService())

	s := oneService()
	web := s.Services["web"]
	web.Endpoints = append(web.Endpoints, Endpoint{Addr: a("198.18.1.3"), Ready: true})
	s.Services["web"] = web
	p, _ := planFor(t, applied, s)
	if got := kinds(&p.IPVSAdd); len(got) != 1 || got[0] != "add destination tcp 198.18.100.1:80 -> 198.18.1.3:8080" || p.IPVSDelete.Len() != 0 {
		t.Errorf("endpoint added: adds %v, deletes %v", got, kinds(&p.IPVSDelete))
	}

	s = oneService()
	web = s.Services["web"]
	web.Endpoints = web.Endpoints[:1]
	s.Services["web"] = web
	p, _ = planFor(t, applied, s)
	if got := kinds(&p.IPVSDelete); len(got) != 1 || got[0] != "delete destination tcp 198.18.100.1:80 -> 198.18.1.2:8080" || p.IPVSAdd.Len() != 0 || len(p.Bind)+len(p.Unbind) != 0 {
		t.Errorf("endpoint removed: deletes %v, adds %v", got, kinds(&p.IPVSAdd))
	}
}

func TestServiceChangesUpdateInPlace(t *testing.T) {
	_, applied := planFor(t, nil, oneService())
	s := oneService()
	web := s.Services["web"]
	web.Scheduler = "wlc"
	web.SessionAffinity = &SessionAffinity{}
	s.Services["web"] = web
	p, _ := planFor(t, applied, s)
	if got := kinds(&p.IPVSAdd); len(got) != 1 || got[0] != "update service tcp 198.18.100.1:80" || p.IPVSDelete.Len() != 0 {
		t.Errorf("scheduler change: adds %v, deletes %v", got, kinds(&p.IPVSDelete))
	}
}

func TestRemovedServiceIsUnboundThenDeleted(t *testing.T) {
	_, applied := planFor(t, nil, oneService())
	p, next := planFor(t, applied, State{})
	if got := kinds(&p.IPVSDelete); len(got) != 1 || got[0] != "delete service tcp 198.18.100.1:80" {
		t.Errorf("deletes %v", got)
	}
	if len(p.Unbind) != 1 || p.Unbind[0] != a("198.18.100.1") || p.IPVSAdd.Len() != 0 {
		t.Errorf("plan %+v", p)
	}
	text, _ := p.render("ipvskit0")
	if strings.Index(text, "ip addr del") > strings.Index(text, "-D -t") {
		t.Errorf("a VIP must be unbound before its virtual server is deleted:\n%s", text)
	}
	if len(next.servers) != 0 || len(next.vips) != 0 {
		t.Errorf("next state not empty: %+v", next)
	}
}

// A plan of more virtual servers than parallelPlan is collected in two
// halves at once; it must be the plan collected in one: every request in
// the same order, the additions and updates of both halves before the
// deletions of both.
func TestPlanInHalvesIsThePlanInOne(t *testing.T) {
	c := &Config{}
	want := compute(bigState(parallelPlan+10), c)
	old := bigState(parallelPlan + 10) // each service with one more endpoint, and another port
	for id, svc := range old.Services {
		svc.Endpoints = append(slices.Clone(svc.Endpoints), Endpoint{Addr: netip.MustParseAddr("198.18.250.1"), Ready: true})
		if id == "svc-7" {
			svc.Scheduler = "lc"
		}
		old.Services[id] = svc
	}
	have := compute(old, c)
	got := makePlan(have, want)

	var ref Plan
	var changed []serverChange
	for k, w := range want.servers {
		changed = append(changed, serverChange{k, w, have.servers[k]})
	}
	slices.SortFunc(changed, func(x, y serverChange) int { return compareServiceKeys(x.k, y.k) })
	planChanges(&ref, changed)
	if len(changed) < parallelPlan {
		t.Fatalf("%d virtual servers: too few to plan in halves", len(changed))
	}
	if !slices.Equal(got.IPVSAdd.Ops(), ref.IPVSAdd.Ops()) || !slices.Equal(got.IPVSDelete.Ops(), ref.IPVSDelete.Ops()) {
		t.Fatal("the plan collected in halves differs from the plan collected in one")
	}
	if n := got.IPVSDelete.Len(); n != len(changed) {
		t.Errorf("%d deletions, want %d (one endpoint of each)", n, len(changed))
	}
	if n := got.IPVSAdd.Len(); n != 1 {
		t.Errorf("%d additions and updates, want 1 (svc-7's scheduler)", n)
	}
}
