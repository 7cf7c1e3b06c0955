package lbd

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

const syncFile = `syncDaemons:
  - {state: master, interface: eth0, syncID: 7}
  - {state: backup, interface: eth0, syncID: 7, group: 239.1.1.1, port: 8849, ttl: 2}
virtualServers:
  web:
    address: 198.18.100.1
    port: 80
    forward: DR
    realServers:
      - {address: 198.18.1.1}
`

// syncDaemons (keepalived's lvs_sync_daemon) reach the Proxier's Config.
func TestLoadSyncDaemons(t *testing.T) {
	c, err := Load([]byte(syncFile))
	if err != nil {
		t.Fatal(err)
	}
	want := []proxier.SyncDaemon{
		{State: ipvs.Master, Interface: "eth0", SyncID: 7},
		{State: ipvs.Backup, Interface: "eth0", SyncID: 7, Group: netip.MustParseAddr("239.1.1.1"), Port: 8849, TTL: 2},
	}
	if diff := cmp.Diff(want, c.ProxierConfig().SyncDaemons, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("Proxier's sync daemons (-want +got):\n%s", diff)
	}
}

// A bad sync daemon is refused at load, by the file's path and line, with
// the Proxier's own reasons where the form is right.
func TestLoadRefusesSyncDaemons(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		path           string
		line           int
	}{
		{"a state that is not a role", "state: backup", "state: primary", "syncDaemons[1].state", 3},
		{"a missing interface", "interface: eth0, syncID: 7}\n  - {state: backup, interface: eth0,", "syncID: 7}\n  - {state: backup, interface: eth0,", "syncDaemons[0].interface", 2},
		{"two masters", "state: backup", "state: master", "syncDaemons[1].state", 3},
		{"an interface name too long", "interface: eth0, syncID: 7, group", "interface: a-very-long-interface-name, syncID: 7, group", "syncDaemons[1].interface", 3},
		{"a group that is not multicast", "group: 239.1.1.1", "group: 198.18.0.1", "syncDaemons[1].group", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := strings.Replace(syncFile, tc.from, tc.to, 1)
			if file == syncFile {
				t.Fatal("the test's replacement changed nothing")
			}
			_, err := Load([]byte(file))
			var v *proxier.ValidationError
			if !errors.As(err, &v) {
				t.Fatalf("Load = %v, want a *proxier.ValidationError", err)
			}
			for _, p := range v.Problems {
				if p.Path == tc.path {
					if p.Line != tc.line {
						t.Errorf("%s at line %d, want %d", p.Path, p.Line, tc.line)
					}
					return
				}
			}
			t.Errorf("no problem at %s:\n%s", tc.path, errString(err))
		})
	}
}

// A reload that changes the sync daemons needs a restart: the Proxier's
// Config is fixed when it opens.
func TestReloadRefusesOtherSyncDaemons(t *testing.T) {
	a, err := Load([]byte(syncFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load([]byte(strings.Replace(syncFile, "syncID: 7}", "syncID: 8}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := sameProxier(a, a); err != nil {
		t.Errorf("the same file: %v", err)
	}
	if err := sameProxier(a, b); err == nil || !strings.Contains(err.Error(), "sync daemons") {
		t.Errorf("other sync daemons: %v, want a refusal naming them", err)
	}
}
