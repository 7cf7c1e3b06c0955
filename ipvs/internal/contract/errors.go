package contract

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/ipvs"
)

// kernelErrors: the kernel's errnos that mislead on their own are named for
// what failed, alone and in a batch, and a failure leaves another program's
// services as they were. An unknown scheduler (ENOENT from the kernel) is
// ErrNotSupported, naming the module, and not fs.ErrNotExist; a request on
// a missing virtual server (ESRCH) says so and is fs.ErrNotExist.
func kernelErrors(t *testing.T, w World) {
	ctx := context.Background()
	unknown := ipvs.Service{Protocol: ipvs.TCP, Addr: a("198.18.100.1"), Port: 82, Scheduler: "nosuch"}
	const unknownMsg = `ipvs: add service tcp 198.18.100.1:82: scheduler "nosuch" not available (module ip_vs_nosuch)`
	missing := ipvs.ServiceKey{Protocol: ipvs.TCP, Addr: a("198.18.100.1"), Port: 83}
	const missingMsg = "ipvs: add destination tcp 198.18.100.1:83 destination 198.18.1.1:8080: no such virtual server tcp 198.18.100.1:83"

	err := w.IPVS.AddService(ctx, unknown)
	t.Logf("unknown scheduler: %v", err)
	wantUnavailable(t, "AddService", err, unknownMsg)
	err = w.IPVS.AddDestination(ctx, missing, masq("198.18.1.1", 8080, 1))
	t.Logf("missing service: %v", err)
	wantNoService(t, "AddDestination", err, missingMsg)
	edited := ipvs.Service{Protocol: ipvs.UDP, Addr: a("198.18.0.1"), Port: 80, Scheduler: "nosuch"}
	err = w.IPVS.UpdateService(ctx, edited) // theirs: the edit fails, their scheduler stays
	wantUnavailable(t, "UpdateService of theirs", err,
		`ipvs: update service udp 198.18.0.1:80: scheduler "nosuch" not available (module ip_vs_nosuch)`)

	var b ipvs.Batch
	b.AddService(unknown)
	b.AddDestination(missing, masq("198.18.1.1", 8080, 1))
	err = w.IPVS.Apply(ctx, &b)
	t.Logf("batch: %v", err)
	var be *ipvs.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 2 {
		t.Fatalf("Apply: %v; want a *BatchError listing 2", err)
	}
	wantUnavailable(t, "batch AddService", be.Failed[0].Err, unknownMsg)
	wantNoService(t, "batch AddDestination", be.Failed[1].Err, missingMsg)
	if w := testutil.RepeatedPrefix(err.Error()); w != "" || strings.Count(err.Error(), "ipvs:") != 1 {
		t.Errorf("batch error %q repeats a prefix", err)
	}
	want(t, w)
}

func wantUnavailable(t *testing.T, what string, err error, msg string) {
	t.Helper()
	var u *ipvs.UnavailableError
	if !errors.As(err, &u) || err.Error() != msg || !errors.Is(err, ipvs.ErrNotSupported) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %v\nwant %q, an *ipvs.UnavailableError matching ErrNotSupported and not fs.ErrNotExist", what, err, msg)
	}
}

func wantNoService(t *testing.T, what string, err error, msg string) {
	t.Helper()
	var n *ipvs.NoServiceError
	if !errors.As(err, &n) || err.Error() != msg || !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ipvs.ErrNotSupported) {
		t.Errorf("%s: %v\nwant %q, an *ipvs.NoServiceError matching fs.ErrNotExist", what, err, msg)
	}
}
