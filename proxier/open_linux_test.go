package proxier

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/vishvananda/netns"
)

// theirLink is another program's dummy link in the node, with an address.
const theirLink = "their0"

// addNeighbour makes another program's objects in the node before any
// Proxier runs: addForeign's virtual server, nft table, ipset and iptables
// chain, and a dummy link with an address and a local route of our
// protocol number.
func (tp *topology) addNeighbour(t *testing.T) {
	t.Helper()
	tp.addForeign(t)
	tp.node.Exec(t, "sh", "-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin\nset -e\n"+
		"ip link add "+theirLink+" type dummy\nip addr add 198.18.201.1/32 dev "+theirLink+"\n"+
		"ip route add local 198.18.201.2 dev "+theirLink+" table local proto 173\n")
}

// theirLines are the lines of every section of s, counters dropped, but
// the tools' comments; of the addresses, only the neighbour link's.
func theirLines(s snapshot) map[string][]string {
	out := map[string][]string{}
	for sec, text := range s {
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(counters.ReplaceAllString(l, "")); l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if sec == "addr" && !strings.Contains(l, " "+theirLink+" ") {
				continue
			}
			out[sec] = append(out[sec], l)
		}
	}
	return out
}

// checkKept fails t for every line of before (the neighbour's objects,
// made before any Proxier) that after lacks.
func checkKept(t *testing.T, when string, before, after snapshot) {
	t.Helper()
	have := theirLines(after)
	for sec, lines := range theirLines(before) {
		for _, l := range lines {
			if !slices.Contains(have[sec], l) {
				t.Errorf("%s: the neighbour's %s line %q is gone:\n%s", when, sec, l, after[sec])
			}
		}
	}
}

// checkSame fails t if the namespace differs between two snapshots.
func checkSame(t *testing.T, when string, want, got snapshot) {
	t.Helper()
	for sec, text := range want {
		w, g := uncommented(text), uncommented(got[sec])
		if w != g {
			t.Errorf("%s changed %s (-want +got):\n%s", when, sec, lineDiff(w, g))
		}
	}
}

// uncommented is a tool's output without counters and comment lines (the
// time iptables-save ran).
func uncommented(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(counters.ReplaceAllString(text, ""), "\n") {
		if !strings.HasPrefix(l, "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestOpen opens a Proxier by the node namespace's file descriptor, once
// per back end, beside a neighbour's virtual server, dummy link, nftables
// table, ipset and iptables chain: Open changes nothing; a Sync serves
// traffic with the rules in the back end Config.Backend names and none in
// the other; Cleanup leaves only the neighbour's objects; Close changes
// nothing and can be called twice.
func TestOpen(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) { testOpen(t, v) })
	}
}

func testOpen(t *testing.T, v variant) {
	be := v.be
	ctx := context.Background()
	tp := newTopology(t, 1, 2)
	tp.addNeighbour(t)
	c1, b1, b2 := tp.clients[0], tp.backends[0], tp.backends[1]
	before := tp.snapshot(t)

	// A copy of the namespace's fd, closed once Open returns: the Proxier
	// must not need it.
	fd, err := unix.FcntlInt(uintptr(tp.node.Handle()), unix.F_DUPFD_CLOEXEC, 0)
	must(t, err)
	p, err := Open(ctx, &Config{Backend: be, VIPMode: v.mode}, netns.NsHandle(fd))
	unix.Close(fd)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer p.Close()
	checkSame(t, "Open", before, tp.snapshot(t))

	state := State{Services: map[string]Service{"web": {
		ClusterIPs: []netip.Addr{a("198.18.100.1")},
		Ports:      []Port{portHTTP},
		Endpoints:  tp.endpoints(true, false, []int{0, 1}),
	}}}
	if _, err := p.Sync(ctx, &state); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	wantCounts(t, "after the Sync", c1.tcp(t, ap("198.18.100.1:80"), 4), map[string]int{b1.name: 2, b2.name: 2})
	s := tp.snapshot(t)
	checkKept(t, "after the Sync", before, s)
	checkContains(t, s, "ipvsadm", "-A -t 198.18.100.1:80 -s rr", "-a -t 198.18.100.1:80 -r 198.18.11.2:8080 -m -w 1")
	if got := s.vipsOn(DefaultLinkName, v.mode); !slices.Equal(got, []string{"198.18.100.1/32"}) {
		t.Errorf("198.18.100.1 not on %s as %v: %v\n%s%s", DefaultLinkName, v.mode, got, s["addr"], s["route"])
	}
	ipt := s["iptables-legacy"] + s["iptables-nft"]
	switch be {
	case NFTables:
		checkContains(t, s, "nft", "table ip ipvskit {", "198.18.100.1 . tcp . 80")
		if strings.Contains(ipt, "IPVSKIT-") || strings.Contains(ipt, "ipvskit:") {
			t.Errorf("the nftables back end wrote iptables rules:\n%s", ipt)
		}
		checkLacks(t, s, "ipset", " IPVSKIT-")
	case IPTables:
		checkContains(t, s, "ipset", "add IPVSKIT-CLUSTER-IP 198.18.100.1,tcp:80", "add IPVSKIT-VIRTUAL-SERVERS 198.18.100.1,tcp:80")
		for _, w := range []string{`-A PREROUTING -m comment --comment "ipvskit:ipvskit" -j IPVSKIT-SERVICES`, "-A IPVSKIT-POSTROUTING"} {
			if !strings.Contains(ipt, w) {
				t.Errorf("iptables-save lacks %q:\n%s", w, ipt)
			}
		}
		checkLacks(t, s, "nft", "table ip ipvskit")
	}

	if err := p.Cleanup(ctx); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	s = tp.snapshot(t)
	checkKept(t, "after Cleanup", before, s)
	checkNothingOurs(t, s)

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	checkSame(t, "Close", s, tp.snapshot(t))
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
}

// TestOpenFailsAndClosesWhatItOpened: when the last client cannot be opened
// (the iptables back end, with no binaries on PATH), Open returns an error
// naming it, and closes every client it had opened: the process has as
// many file descriptors as before, and the namespace is unchanged.
func TestOpenFailsAndClosesWhatItOpened(t *testing.T) {
	ctx := context.Background()
	tp := newTopology(t, 0, 0)
	tp.addNeighbour(t)
	before := tp.snapshot(t)
	fd := int(tp.node.Handle())
	// Once first, so that what the runtime opens once (the poller) is
	// counted in both counts.
	p, err := Open(ctx, nil, netns.NsHandle(fd))
	must(t, err)
	must(t, p.Close())
	n := openFDs(t)
	path := os.Getenv("PATH")
	t.Setenv("PATH", "/nonexistent")
	p, err = Open(ctx, &Config{Backend: IPTables}, netns.NsHandle(fd))
	if p != nil || !errors.Is(err, ipvs.ErrNotSupported) || !strings.Contains(err.Error(), "IPv4 iptables back end") {
		t.Fatalf("Open without iptables binaries: %v, %v; want no Proxier and an error naming the IPv4 iptables back end, wrapping ErrNotSupported", p, err)
	}
	if got := openFDs(t); got != n {
		t.Errorf("the failed Open left %d file descriptors open, had %d before", got, n)
	}
	os.Setenv("PATH", path) // the tools the snapshot runs need it
	checkSame(t, "the failed Open", before, tp.snapshot(t))
}

// fileFD opens path for t, and returns its file descriptor.
func fileFD(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return int(f.Fd())
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(ents)
}

// TestOpenRefusesBadConfig: a bad Config or namespace is a *ValidationError
// naming each field and value, returned before anything is opened, and the
// namespace (with another program's nftables table and iptables chain) is
// unchanged. It needs no IPVS: it runs on the host too.
func TestOpenRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	ns := testutil.NewNetNS(t)
	const script = "PATH=/usr/sbin:/sbin:/usr/bin:/bin\n"
	ns.Exec(t, "sh", "-c", script+"set -e\nnft -f - <<'EOF'\n"+foreignNFT+"EOF\n"+
		"iptables-restore --noflush <<'EOF'\n*nat\n:FOREIGN - [0:0]\n"+foreignIPTRule+"\nCOMMIT\nEOF\n")
	view := func() string {
		return ns.Exec(t, "sh", "-c", script+"nft list ruleset; iptables-save | grep -v '^#'; ip -o link")
	}
	before := view()
	for _, c := range []struct {
		name  string
		cfg   *Config
		netns int
		want  []Problem
	}{
		{"config", &Config{Instance: "kube", Backend: 9, MaxDrain: -1}, int(ns.Handle()), []Problem{
			{Path: "config.instance", Value: `"kube"`}, {Path: "config.backend", Value: "Backend(9)"}, {Path: "config.maxDrain", Value: "-1ns"},
		}},
		{"netns", nil, -1, []Problem{{Path: "netns", Value: "-1"}}},
		{"not a namespace", nil, fileFD(t, "/dev/null"), nil},
		{"not a network namespace", nil, fileFD(t, "/proc/self/ns/uts"), nil},
	} {
		if c.want == nil {
			c.want = []Problem{{Path: "netns", Value: strconv.Itoa(c.netns)}}
		}
		t.Run(c.name, func(t *testing.T) {
			p, err := Open(ctx, c.cfg, netns.NsHandle(c.netns))
			var ve *ValidationError
			if p != nil || !errors.As(err, &ve) {
				t.Fatalf("Open: %v, %v; want a *ValidationError", p, err)
			}
			for _, w := range c.want {
				if !slices.ContainsFunc(ve.Problems, func(p Problem) bool { return p.Path == w.Path && p.Value == w.Value }) {
					t.Errorf("no problem at %s with value %s in:\n%v", w.Path, w.Value, err)
				}
			}
			if got := view(); got != before {
				t.Errorf("the refused Open changed the namespace (-want +got):\n%s", lineDiff(before, got))
			}
		})
	}
}
