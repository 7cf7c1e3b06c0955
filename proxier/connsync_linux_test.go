package proxier

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
)

// syncMode is how the test's nodes sync connections.
type syncMode int

const (
	noSync       syncMode = iota // no sync daemons
	masterBackup                 // A a master, B a backup
	bothRoles                    // each node both, for failback too
)

func (m syncMode) String() string {
	return [...]string{"without-sync", "master-backup", "both-roles-failback"}[m]
}

// daemonsFor is the Config.SyncDaemons of node A (a) or B in mode m.
func (m syncMode) daemonsFor(a bool) []SyncDaemon {
	master := SyncDaemon{State: ipvs.Master, Interface: "eth0", SyncID: foSyncID}
	backup := SyncDaemon{State: ipvs.Backup, Interface: "eth0", SyncID: foSyncID}
	switch {
	case m == bothRoles:
		return []SyncDaemon{master, backup}
	case m == masterBackup && a:
		return []SyncDaemon{master}
	case m == masterBackup:
		return []SyncDaemon{backup}
	}
	return nil
}

// TestIntegrationConnSync fails a long-lived TCP connection over from
// node A to node B, as VRRP moving the VIP would, with and without IPVS's
// connection sync run by the nodes' Proxiers (Config.SyncDaemons): with
// it, B learns the connection from A and the same connection carries on
// through B to the same backend, without a reset; without it, B has never
// heard of the connection and its own stack resets it (so the test can
// fail). Either way B balances new connections over both backends. With a
// master on A and a backup on B, A sees none of them; a master stopped
// behind the Proxier's back is restarted by Reconcile (and the restarted
// one is what carries the connection); another program's sync daemon (a
// backup on A) is untouched through Sync, Reconcile and Cleanup. With both
// roles on each node, that other program's backup is a conflict for A's
// first Sync until it goes; and the VIP moves back to A: both the first
// connection and one opened through B carry on (failback). Another
// program's virtual server, nft table, ipset, chain and link on each node
// are untouched throughout.
func TestIntegrationConnSync(t *testing.T) {
	for _, m := range []syncMode{masterBackup, noSync, bothRoles} {
		t.Run(m.String(), func(t *testing.T) { testConnSync(t, m) })
	}
}

// theirDaemon is another program's sync daemon on node A, as ipvsadm
// lists it.
const theirDaemon = "backup sync daemon (mcast=eth0, syncid=99, maxlen=1472, group=224.0.0.81, port=8848, ttl=1)"

func testConnSync(t *testing.T, m syncMode) {
	ctx := context.Background()
	fn := newFailoverNet(t)
	fn.a.addForeign(t)
	fn.b.addForeign(t)
	sh(t, fn.a.node, "ipvsadm --start-daemon backup --mcast-interface eth0 --syncid 99")
	ka, kb := fn.a.newProxier(t, Config{SyncDaemons: m.daemonsFor(true)}), fn.b.newProxier(t, Config{SyncDaemons: m.daemonsFor(false)})
	theirs := theirDaemon
	if m == bothRoles {
		// A's backup role is taken: a conflict, nothing applied, until
		// the other program's daemon goes.
		_, err := ka.p.Sync(ctx, ptr(failoverState()))
		var ce *DaemonConflictError
		if !errors.As(err, &ce) {
			t.Fatalf("node A's first Sync beside another program's backup daemon: %v; want a *DaemonConflictError", err)
		}
		checkLacks(t, fn.a.snapshot(t), "ipvsadm", foVIP.String())
		sh(t, fn.a.node, "ipvsadm --stop-daemon backup")
		theirs = ""
	}
	resA, resB := ka.sync(t, failoverState()), kb.sync(t, failoverState())
	for _, c := range []struct {
		res *Result
		ds  []SyncDaemon
	}{{resA, m.daemonsFor(true)}, {resB, m.daemonsFor(false)}} {
		for _, d := range c.ds {
			if want := "ipvsadm " + strings.Join(ipvsadm.StartDaemonArgs(d), " ") + "\n"; !strings.Contains(c.res.Plan.String(), want) {
				t.Errorf("first sync's plan lacks %q:\n%s", want, c.res.Plan)
			}
		}
	}
	if m == masterBackup {
		// Stopped behind its back: Reconcile starts it again.
		master := "master sync daemon (mcast=eth0, syncid=7, maxlen=1472, group=224.0.0.81, port=8848, ttl=1)"
		sh(t, fn.a.node, "ipvsadm --stop-daemon master")
		rep, err := ka.p.Reconcile(ctx)
		must(t, err)
		wantReport(t, rep, "ipvs: master sync daemon: missing")
		if got := daemonsOn(t, fn.a.node); got != master+"\n"+theirs {
			t.Errorf("node A's sync daemons after Reconcile:\n%s\nwant:\n%s\n%s", got, master, theirs)
		}
	}

	client := &host{name: "client", ns: fn.client}
	vip := netip.AddrPortFrom(foVIP, fwdPort)
	ec := client.dialEcho(t, vip)
	if ec.peer != foClient {
		t.Fatalf("%s saw the connection from %v, want the client %v", ec.backend, ec.peer, foClient)
	}
	must(t, ec.roundTrip("through A"))
	if !hasConn(t, fn.a.node, ec) {
		t.Fatal("node A has no IPVS connection for the client's")
	}
	if m != noSync {
		waitConn(t, fn.b.node, "B", ec, 2*time.Minute) // the master sends its buffer every 2 s or so
	} else if n := clientConns(t, fn.b.node); n != 0 {
		t.Fatalf("node B has %d IPVS connections from the client without sync, want 0", n)
	}

	// The VIP moves to B.
	sh(t, fn.lan, "ip route replace "+foVIP.String()+"/32 via "+foNodeB)
	err := ec.roundTrip("through B")
	switch {
	case m != noSync && err != nil:
		t.Fatalf("the connection to %s after the failover to B: %v", ec.backend, err)
	case m == noSync && err == nil:
		t.Fatalf("without sync, the connection to %s carried on through B: the test cannot tell sync from none", ec.backend)
	case m == noSync:
		t.Logf("without sync, the connection after the failover: %v", err)
	default:
		must(t, ec.roundTrip("through B again"))
	}

	// New connections: balanced by B over both backends.
	before, beforeA := clientConns(t, fn.b.node), clientConns(t, fn.a.node)
	seen := map[string]int{}
	for i := range 4 {
		nc := client.dialEcho(t, vip)
		must(t, nc.roundTrip(fmt.Sprintf("new %d", i)))
		seen[nc.backend]++
		nc.c.Close()
	}
	if seen["be1"] != 2 || seen["be2"] != 2 {
		t.Errorf("four new connections through B went to %v, want two to each backend", seen)
	}
	if n := clientConns(t, fn.b.node); n < before+4 {
		t.Errorf("node B has %d IPVS connections from the client, want at least %d", n, before+4)
	}
	if m == bothRoles {
		failback(t, fn, client, ec)
	} else if n := clientConns(t, fn.a.node); n != beforeA {
		t.Errorf("node A has %d IPVS connections from the client, want still %d: it got none of the new ones", n, beforeA)
	}

	must(t, ka.p.Cleanup(ctx))
	must(t, kb.p.Cleanup(ctx))
	if got := daemonsOn(t, fn.a.node); got != theirs {
		t.Errorf("node A's sync daemons after Cleanup:\n%s\nwant only the other program's:\n%s", got, theirs)
	}
	if got := daemonsOn(t, fn.b.node); got != "" {
		t.Errorf("node B's sync daemons after Cleanup:\n%s", got)
	}
	for _, tp := range []*topology{fn.a, fn.b} {
		s := tp.snapshot(t)
		checkLacks(t, s, "ipvsadm", foVIP.String())
		checkForeign(t, s)
	}
}

// failback opens a connection through B, waits until A has it (B's
// master, A's backup), moves the VIP back to A, and checks that it and the
// first connection (ec) both carry on.
func failback(t *testing.T, fn *failoverNet, client *host, ec *echoConn) {
	t.Helper()
	nc := client.dialEcho(t, netip.AddrPortFrom(foVIP, fwdPort))
	must(t, nc.roundTrip("opened through B"))
	waitConn(t, fn.a.node, "A", nc, 2*time.Minute)
	sh(t, fn.lan, "ip route replace "+foVIP.String()+"/32 via "+foNodeA)
	for name, c := range map[string]*echoConn{"the first connection": ec, "the one opened through B": nc} {
		if err := c.roundTrip("back through A"); err != nil {
			t.Errorf("%s, to %s, after the failback to A: %v", name, c.backend, err)
		}
	}
}
