package iptables

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/ipset"
)

// fakeSets records the ipset calls and keeps the sets' contents, for
// ListAll and List.
type fakeSets struct {
	calls   []string
	updates int
	sets    map[string]*ipset.SetInfo
	// listAllErr, when set, fails ListAll with entries (as a foreign set
	// of a type package ipset does not model does).
	listAllErr error
}

func (f *fakeSets) set(s ipset.Set) *ipset.SetInfo {
	if f.sets == nil {
		f.sets = map[string]*ipset.SetInfo{}
	}
	if f.sets[s.Name] == nil {
		f.sets[s.Name] = &ipset.SetInfo{Set: s, Entries: []ipset.Entry{}}
	}
	return f.sets[s.Name]
}

func (f *fakeSets) Replace(ctx context.Context, s ipset.Set, e []ipset.Entry) error {
	f.calls = append(f.calls, "replace "+s.Name)
	f.set(s).Entries = slices.Clone(e)
	return nil
}

func (f *fakeSets) ListAll(ctx context.Context, headersOnly bool) ([]ipset.SetInfo, error) {
	f.calls = append(f.calls, fmt.Sprintf("list all %v", headersOnly))
	if !headersOnly && f.listAllErr != nil {
		return nil, f.listAllErr
	}
	var out []ipset.SetInfo
	for _, name := range slices.Sorted(maps.Keys(f.sets)) {
		si := *f.sets[name]
		si.Entries = slices.Clone(si.Entries)
		if headersOnly {
			si.Entries = nil
		}
		out = append(out, si)
	}
	return out, nil
}

func (f *fakeSets) List(ctx context.Context, name string) (ipset.SetInfo, error) {
	f.calls = append(f.calls, "list "+name)
	si, ok := f.sets[name]
	if !ok {
		return ipset.SetInfo{}, fs.ErrNotExist
	}
	out := *si
	out.Entries = slices.Clone(si.Entries)
	return out, nil
}

// Update records each change as the add or del of its first entry, and
// counts the calls: a sync's adds (or deletes) over all sets are one call.
func (f *fakeSets) Update(ctx context.Context, changes ...ipset.Change) error {
	f.updates++
	for _, c := range changes {
		si := f.set(c.Set)
		si.Entries = slices.DeleteFunc(si.Entries, func(e ipset.Entry) bool { return slices.Contains(c.Del, e) })
		for _, e := range c.Add {
			if !slices.Contains(si.Entries, e) {
				si.Entries = append(si.Entries, e)
			}
		}
		if len(c.Add) > 0 {
			f.calls = append(f.calls, "add "+c.Set.Name+" "+c.Add[0].String())
		}
		if len(c.Del) > 0 {
			f.calls = append(f.calls, "del "+c.Set.Name+" "+c.Del[0].String())
		}
	}
	return nil
}
func (f *fakeSets) Destroy(ctx context.Context, name string) error {
	f.calls = append(f.calls, "destroy "+name)
	delete(f.sets, name)
	return nil
}
func (f *fakeSets) Close() error { return nil }

// fakeRun records the binaries run and keeps, per flavor, the tables the
// restores it was fed leave (declare, -A, -I, -D, -X); a save prints them,
// or save if that is set. With restoreErr set, every restore fails with it.
type fakeRun struct {
	calls      []string
	inputs     []string // what each restore was fed
	save       string
	restoreErr error
	tables     map[string]map[string]*fakeTable // flavor -> table name
}

type fakeTable struct {
	chains []string // in creation order, the built-in ones first
	rules  map[string][]string
}

func (f *fakeRun) flavorTables(name string) map[string]*fakeTable {
	fl := "nft"
	if strings.Contains(name, "legacy") {
		fl = "legacy"
	}
	if f.tables == nil {
		f.tables = map[string]map[string]*fakeTable{}
	}
	if f.tables[fl] == nil {
		f.tables[fl] = map[string]*fakeTable{
			"filter": {chains: []string{"INPUT", "FORWARD", "OUTPUT"}, rules: map[string][]string{}},
			"nat":    {chains: []string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"}, rules: map[string][]string{}},
		}
	}
	return f.tables[fl]
}

func (f *fakeRun) run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, name)
	tables := f.flavorTables(name)
	if strings.HasSuffix(name, "-save") {
		if f.save != "" {
			return []byte(f.save), nil
		}
		var b strings.Builder
		for _, tn := range []string{"filter", "nat"} {
			t := tables[tn]
			fmt.Fprintf(&b, "*%s\n", tn)
			for _, c := range t.chains {
				fmt.Fprintf(&b, ":%s - [0:0]\n", c)
			}
			for _, c := range t.chains {
				for _, r := range t.rules[c] {
					fmt.Fprintf(&b, "-A %s %s\n", c, r)
				}
			}
			b.WriteString("COMMIT\n")
		}
		return []byte(b.String()), nil
	}
	if !strings.HasSuffix(name, "-restore") {
		return nil, nil
	}
	f.inputs = append(f.inputs, string(stdin))
	if f.restoreErr != nil {
		return nil, f.restoreErr
	}
	var t *fakeTable
	for _, l := range strings.Split(string(stdin), "\n") {
		op, rest, _ := strings.Cut(l, " ")
		chain, spec, _ := strings.Cut(rest, " ")
		switch {
		case strings.HasPrefix(l, "*"):
			t = tables[l[1:]]
		case strings.HasPrefix(l, ":"):
			c, _, _ := strings.Cut(l[1:], " ")
			if !slices.Contains(t.chains, c) {
				t.chains = append(t.chains, c)
			}
			t.rules[c] = nil
		case op == "-A":
			t.rules[chain] = append(t.rules[chain], spec)
		case op == "-I":
			_, spec, _ = strings.Cut(spec, " ") // position 1
			t.rules[chain] = append([]string{spec}, t.rules[chain]...)
		case op == "-D":
			i := slices.Index(t.rules[chain], spec)
			if i < 0 && f.save != "" {
				continue // the model is not what save shows
			}
			if i < 0 {
				return nil, fmt.Errorf("exit status 1: %s: line x failed", name)
			}
			t.rules[chain] = slices.Delete(t.rules[chain], i, i+1)
		case op == "-X":
			t.chains = slices.DeleteFunc(t.chains, func(c string) bool { return c == chain })
			delete(t.rules, chain)
		}
	}
	return nil, nil
}

func count(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func TestIPTablesSendsOnlyWhatChanged(t *testing.T) {
	sets, run := &fakeSets{}, &fakeRun{}
	b := &iptBackend{fam: IPv4, flavor: FlavorNFT, names: defaultNames, sets: sets, run: run}
	ctx := context.Background()
	r := sample(IPv4, Options{})
	if err := b.apply(ctx, b, r, false); err != nil {
		t.Fatal(err)
	}
	if n := count(sets.calls, "replace "); n != numSets-1 {
		t.Fatalf("full sync: %d set replaces, want %d", n, numSets-1)
	}
	if got := strings.Join(run.calls, ","); got != "iptables-nft-save,iptables-nft-restore,iptables-nft-restore" {
		t.Fatalf("full sync ran %s; want save (ownership, jump check), restore, restore (jumps)", got)
	}

	sets.calls, run.calls = nil, nil
	if err := b.apply(ctx, b, r, false); err != nil || len(sets.calls)+len(run.calls) != 0 {
		t.Fatalf("a sync without change did something: %v %v %v", err, sets.calls, run.calls)
	}

	r.Add(ClusterIPSet, AddrPort(mustAddr("198.18.9.9"), TCP, 80))
	r.Remove(NodePortTCP, Port(30080))
	if err := b.apply(ctx, b, r, false); err != nil {
		t.Fatal(err)
	}
	want := []string{"add IPVSKIT-CLUSTER-IP 198.18.9.9,tcp:80", "del IPVSKIT-NODE-PORT-TCP 30080"}
	if strings.Join(sets.calls, ";") != strings.Join(want, ";") || len(run.calls) != 0 {
		t.Fatalf("one-member changes: sets %v, runs %v; want %v and no run", sets.calls, run.calls, want)
	}

	sets.calls, run.calls = nil, nil
	r.Clear(LoopBack) // the hairpin rule goes away
	if err := b.apply(ctx, b, r, false); err != nil {
		t.Fatal(err)
	}
	if strings.Join(run.calls, ",") != "iptables-nft-restore" {
		t.Fatalf("emptying a set must rewrite the rules once: %v", run.calls)
	}

	// A failure makes the next sync a full one.
	b.fail = func(step string) error {
		if step == "restore" {
			return errors.New("boom")
		}
		return nil
	}
	r.Add(LoopBack, AddrPortAddr(mustAddr("198.18.1.1"), TCP, 1, mustAddr("198.18.1.1")))
	if err := b.apply(ctx, b, r, false); err == nil {
		t.Fatal("the injected failure was lost")
	}
	b.fail = nil
	sets.calls = nil
	if err := b.apply(ctx, b, r, false); err != nil {
		t.Fatal(err)
	}
	if n := count(sets.calls, "replace "); n != numSets-1 {
		t.Fatalf("after a failure the next sync must be full: %v", sets.calls)
	}
}

func TestIPTablesRejectsBeforeTouching(t *testing.T) {
	sets, run := &fakeSets{}, &fakeRun{}
	b := &iptBackend{fam: IPv4, flavor: FlavorLegacy, names: defaultNames, sets: sets, run: run}
	r := sample(IPv4, Options{MasqueradeMark: 3})
	var ve *ValidationError
	if err := b.apply(context.Background(), b, r, false); !errors.As(err, &ve) || ve.Field != "Options.MasqueradeMark" {
		t.Fatalf("want a ValidationError on the mark, got %v", err)
	}
	if len(sets.calls)+len(run.calls) != 0 {
		t.Fatalf("a rejected ruleset touched the system: %v %v", sets.calls, run.calls)
	}
	if err := b.apply(context.Background(), b, sample(IPv6, Options{}), false); !errors.As(err, &ve) || ve.Field != "Family" {
		t.Fatalf("want a ValidationError on the family, got %v", err)
	}
}

func TestParseSaveAndJumps(t *testing.T) {
	j := defaultNames.jumpRules()[1]
	s := parseSave("# x\n*nat\n:PREROUTING ACCEPT [0:0]\n:IPVSKIT-SERVICES - [0:0]\n" + j.line() + "\nCOMMIT\n")
	if !s.hasChain("nat", "IPVSKIT-SERVICES") || !s.hasRule("nat", j.line()) || s.hasRule("filter", j.line()) {
		t.Fatalf("parseSave: %+v", s["nat"])
	}
}
