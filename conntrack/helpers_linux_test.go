package conntrack_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/conntrack"
	"github.com/ipvskit/ipvskit/internal/testutil"
)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
func addr(s string) netip.Addr   { return netip.MustParseAddr(s) }

// flow is a flow from client to vip answered by backend, as IPVS masquerade
// leaves it in the table.
func flow(p conntrack.Protocol, client, vip, backend string) conntrack.Flow {
	c := ap(client)
	return conntrack.Flow{Protocol: p, Original: conntrack.Tuple{Src: c, Dst: ap(vip)}, Reply: conntrack.Tuple{Src: ap(backend), Dst: c}}
}

// newClient opens a Client on ns's table; a kernel without ctnetlink skips
// the test (fails it in the VM rig).
func newClient(t *testing.T, ns *testutil.NetNS) *conntrack.Client {
	t.Helper()
	testutil.RequireTool(t, "conntrack")
	c, err := conntrack.New(&conntrack.Config{NetNS: ns.Handle()})
	if errors.Is(err, conntrack.ErrNotSupported) {
		testutil.Missing(t, "netfilter netlink", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_, err = c.Delete(context.Background(), conntrack.Filter{Protocol: conntrack.UDP, Addr: addr("198.18.255.255"), Port: 1})
	if errors.Is(err, conntrack.ErrNotSupported) {
		testutil.Missing(t, "ctnetlink (module nf_conntrack_netlink)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// insert creates flows in ns's table with one run of conntrack -R (in the
// emulated VM every exec costs seconds), in conntrack zone zone (0: the
// default zone).
func insert(t *testing.T, ns *testutil.NetNS, zone uint16, flows ...conntrack.Flow) {
	t.Helper()
	var b strings.Builder
	for _, f := range flows {
		fmt.Fprintf(&b, "-I -p %v -s %v -d %v --sport %d --dport %d -r %v -q %v --reply-port-src %d --reply-port-dst %d -t 600",
			f.Protocol, f.Original.Src.Addr(), f.Original.Dst.Addr(), f.Original.Src.Port(), f.Original.Dst.Port(),
			f.Reply.Src.Addr(), f.Reply.Dst.Addr(), f.Reply.Src.Port(), f.Reply.Dst.Port())
		switch f.Protocol {
		case conntrack.TCP:
			b.WriteString(" --state ESTABLISHED")
		case conntrack.SCTP:
			b.WriteString(" --state ESTABLISHED --orig-vtag 1 --reply-vtag 2")
		}
		if zone != 0 {
			fmt.Fprintf(&b, " -w %d", zone)
		}
		b.WriteByte('\n')
	}
	// From a file: the VM rig's guest has no /dev/stdin for "-R -".
	path := filepath.Join(t.TempDir(), "flows")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.TryExec(t, nil, "conntrack", "-R", path); err != nil {
		t.Fatalf("conntrack -R: %v\n%s", err, b.String())
	}
}

var protocols = map[string]conntrack.Protocol{"tcp": conntrack.TCP, "udp": conntrack.UDP, "sctp": conntrack.SCTP}

// list returns ns's table as conntrack -L prints it (both families), sorted
// by String.
func list(t *testing.T, ns *testutil.NetNS) []conntrack.Flow {
	t.Helper()
	var out []conntrack.Flow
	for _, l := range strings.Split(strings.TrimSpace(ns.Exec(t, "conntrack", "-L")), "\n") {
		if l == "" {
			continue
		}
		f, err := parseFlow(l)
		if err != nil {
			t.Fatalf("conntrack -L line %q: %v", l, err)
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b conntrack.Flow) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// parseFlow reads "udp 17 119 src=.. dst=.. sport=.. dport=.. [UNREPLIED]
// src=.. dst=.. sport=.. dport=.. mark=0 use=1": the first src, dst, sport
// and dport are the original tuple's, the second ones the reply's.
func parseFlow(l string) (conntrack.Flow, error) {
	fs := strings.Fields(l)
	var f conntrack.Flow
	var ok bool
	if f.Protocol, ok = protocols[fs[0]]; !ok {
		return f, fmt.Errorf("protocol %q", fs[0])
	}
	var addrs [2][2]netip.Addr // [tuple][src,dst]
	var ports [2][2]uint16
	seen := map[string]int{}
	for _, kv := range fs[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		i := seen[k]
		seen[k]++
		if i > 1 {
			continue
		}
		var err error
		switch k {
		case "src", "dst":
			j := map[string]int{"src": 0, "dst": 1}[k]
			addrs[i][j], err = netip.ParseAddr(v)
		case "sport", "dport":
			j := map[string]int{"sport": 0, "dport": 1}[k]
			var p uint64
			p, err = strconv.ParseUint(v, 10, 16)
			ports[i][j] = uint16(p)
		}
		if err != nil {
			return f, err
		}
	}
	tuple := func(i int) conntrack.Tuple {
		return conntrack.Tuple{Src: netip.AddrPortFrom(addrs[i][0], ports[i][0]), Dst: netip.AddrPortFrom(addrs[i][1], ports[i][1])}
	}
	f.Original, f.Reply = tuple(0), tuple(1)
	if !f.Original.Src.Addr().IsValid() || !f.Reply.Src.Addr().IsValid() {
		return f, fmt.Errorf("no tuples")
	}
	return f, nil
}

func sorted(fs []conntrack.Flow) []conntrack.Flow {
	out := slices.Clone(fs)
	slices.SortFunc(out, func(a, b conntrack.Flow) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func diffFlows(t *testing.T, what string, got, want []conntrack.Flow) {
	t.Helper()
	got, want = sorted(got), sorted(want)
	if !slices.Equal(got, want) {
		var b strings.Builder
		for _, f := range want {
			if !slices.Contains(got, f) {
				fmt.Fprintf(&b, "-%v\n", f)
			}
		}
		for _, f := range got {
			if !slices.Contains(want, f) {
				fmt.Fprintf(&b, "+%v\n", f)
			}
		}
		t.Errorf("%s (-want +got):\n%s", what, b.String())
	}
}
