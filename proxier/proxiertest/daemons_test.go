package proxiertest_test

import (
	"context"
	"testing"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
	"github.com/ipvskit/ipvskit/proxier/proxiertest"
)

// Each sync daemon call is one operation the Injector can fail: whether a
// start is refused, or takes effect and its answer is lost, or the list
// that Reconcile reads fails, the next Sync (or Reconcile) ends with the
// configured daemon running, once.
func TestInjectedSyncDaemonFaultsAreRepaired(t *testing.T) {
	ctx := context.Background()
	master := proxier.SyncDaemon{State: ipvs.Master, Interface: "eth0", SyncID: 7}
	for _, tc := range []struct {
		call string
		mode proxiertest.Mode
	}{
		{"IPVS.StartDaemon", proxiertest.Refuse},
		{"IPVS.StartDaemon", proxiertest.LoseReply},
		{"IPVS.Daemons", proxiertest.Refuse},
	} {
		fakes := proxiertest.NewFakeDeps(nil)
		in := proxiertest.New()
		p, err := proxier.New(&proxier.Config{SyncDaemons: []proxier.SyncDaemon{master}}, in.Wrap(fakes.Deps()))
		if err != nil {
			t.Fatal(err)
		}
		in.FailFirst(func(o proxiertest.Op) bool { return o.Call == tc.call }, tc.mode)
		if _, err := p.Sync(ctx, webState()); err == nil {
			t.Errorf("%s %v: the Sync did not fail", tc.call, tc.mode)
		}
		if _, err := p.Sync(ctx, webState()); err != nil {
			t.Fatalf("%s %v: the Sync after: %v", tc.call, tc.mode, err)
		}
		if _, err := p.Reconcile(ctx); err != nil {
			t.Fatalf("%s %v: Reconcile: %v", tc.call, tc.mode, err)
		}
		ds, err := fakes.IPVS.Daemons(ctx)
		if err != nil || len(ds) != 1 || ds[0].State != ipvs.Master || ds[0].SyncID != 7 {
			t.Errorf("%s %v: daemons %+v, %v; want the master", tc.call, tc.mode, ds, err)
		}
		if in.Injected() == nil {
			t.Errorf("%s %v: no fault injected", tc.call, tc.mode)
		}
	}
}
