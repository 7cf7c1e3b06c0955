package ipvs

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/ipvskit/ipvskit/internal/nlconn/nlconntest"
	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/ipvskit/ipvskit/internal/vm"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The errnos that mislead on their own are named for what failed, in
// single calls and in batches; the others pass through as they were.
func TestKernelErrorsNameWhatFailed(t *testing.T) {
	svc := Service{Protocol: TCP, Addr: netip.MustParseAddr("198.18.100.1"), Port: 82, Scheduler: "nosuch"}
	sip := Service{Protocol: UDP, Addr: netip.MustParseAddr("198.18.100.1"), Port: 5060, Scheduler: "rr",
		PersistenceEngine: "sip", Persistence: Persistence{Timeout: 60e9}}
	peOnly := sip
	peOnly.Scheduler = "none"
	k := ServiceKey{Protocol: TCP, Addr: netip.MustParseAddr("198.18.100.1"), Port: 83}
	d := Destination{Addr: netip.MustParseAddr("198.18.1.1"), Port: 8080, Weight: 1}
	const (
		notSupp  = "ErrNotSupported"
		notExist = "fs.ErrNotExist"
	)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		cmd   uint8
		errno unix.Errno
		call  func(c *Client) error
		want  string
		is    string
	}{
		{"unknown scheduler", cmdNewService, unix.ENOENT, func(c *Client) error { return c.AddService(ctx, svc) },
			`ipvs: add service tcp 198.18.100.1:82: scheduler "nosuch" not available (module ip_vs_nosuch)`, notSupp},
		{"unknown scheduler on edit", cmdSetService, unix.ENOENT, func(c *Client) error { return c.UpdateService(ctx, svc) },
			`ipvs: update service tcp 198.18.100.1:82: scheduler "nosuch" not available (module ip_vs_nosuch)`, notSupp},
		{"scheduler or engine", cmdNewService, unix.ENOENT, func(c *Client) error { return c.AddService(ctx, sip) },
			`ipvs: add service udp 198.18.100.1:5060: scheduler "rr" or persistence engine "sip" not available (module ip_vs_rr or ip_vs_pe_sip)`, notSupp},
		{"engine, no scheduler", cmdNewService, unix.ENOENT, func(c *Client) error { return c.AddService(ctx, peOnly) },
			`ipvs: add service udp 198.18.100.1:5060: persistence engine "sip" not available (module ip_vs_pe_sip)`, notSupp},
		{"update of a missing service", cmdSetService, unix.ESRCH, func(c *Client) error { return c.UpdateService(ctx, svc) },
			"ipvs: update service tcp 198.18.100.1:82: no such virtual server tcp 198.18.100.1:82", notExist},
		{"delete of a missing service", cmdDelService, unix.ESRCH, func(c *Client) error { return c.DeleteService(ctx, k) },
			"ipvs: delete service tcp 198.18.100.1:83: no such virtual server tcp 198.18.100.1:83", notExist},
		{"destination to a missing service", cmdNewDest, unix.ESRCH, func(c *Client) error { return c.AddDestination(ctx, k, d) },
			"ipvs: add destination tcp 198.18.100.1:83 destination 198.18.1.1:8080: no such virtual server tcp 198.18.100.1:83", notExist},
		{"destination update in a missing service", cmdSetDest, unix.ESRCH, func(c *Client) error { return c.UpdateDestination(ctx, k, d) },
			"ipvs: update destination tcp 198.18.100.1:83 destination 198.18.1.1:8080: no such virtual server tcp 198.18.100.1:83", notExist},
		{"destination removal from a missing service", cmdDelDest, unix.ESRCH, func(c *Client) error { return c.DeleteDestination(ctx, k, d.Key()) },
			"ipvs: delete destination tcp 198.18.100.1:83 destination 198.18.1.1:8080: no such virtual server tcp 198.18.100.1:83", notExist},
		{"get of a missing service", cmdGetService, unix.ESRCH, func(c *Client) error { _, err := c.GetService(ctx, k); return err },
			"ipvs: get service tcp 198.18.100.1:83: no such virtual server tcp 198.18.100.1:83", notExist},
		{"zero of a missing service", cmdZero, unix.ESRCH, func(c *Client) error { return c.ZeroService(ctx, k) },
			"ipvs: zero counters tcp 198.18.100.1:83: no such virtual server tcp 198.18.100.1:83", notExist},
		{"missing destination stays ENOENT", cmdSetDest, unix.ENOENT, func(c *Client) error { return c.UpdateDestination(ctx, k, d) },
			"ipvs: update destination tcp 198.18.100.1:83 destination 198.18.1.1:8080: no such file or directory", notExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := scriptedClient(t, nlconntest.Call{Op: nlconntest.Execute,
				Requests: []nlconntest.Request{ipvsReq(tc.cmd, nlconntest.Errno(tc.errno))}})
			err := tc.call(c)
			checkKernelError(t, err, tc.want, tc.is == notSupp)
		})
	}

	t.Run("batch", func(t *testing.T) {
		var b Batch
		b.AddService(svc)
		b.AddDestination(k, d)
		c, _ := scriptedClient(t, nlconntest.Call{
			Op:      nlconntest.Batch,
			Options: &nlconn.BatchOptions{},
			Requests: []nlconntest.Request{
				ipvsReq(cmdNewService, nlconntest.Errno(unix.ENOENT)),
				ipvsReq(cmdNewDest, nlconntest.Errno(unix.ESRCH)),
			},
		})
		err := c.Apply(ctx, &b)
		var be *BatchError
		if !errors.As(err, &be) || len(be.Failed) != 2 {
			t.Fatalf("Apply = %v; want a *BatchError with both failed", err)
		}
		checkKernelError(t, be.Failed[0].Err, `ipvs: add service tcp 198.18.100.1:82: scheduler "nosuch" not available (module ip_vs_nosuch)`, true)
		checkKernelError(t, be.Failed[1].Err, "ipvs: add destination tcp 198.18.100.1:83 destination 198.18.1.1:8080: no such virtual server tcp 198.18.100.1:83", false)
		const want = `ipvs: batch: 2 of 2 requests failed; first (#0): add service tcp 198.18.100.1:82: scheduler "nosuch" not available (module ip_vs_nosuch)`
		if err.Error() != want {
			t.Errorf("batch error:\n got %q\nwant %q", err, want)
		}
		if !errors.Is(err, ErrNotSupported) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("batch error %v: want it to match both ErrNotSupported and fs.ErrNotExist (one failure each)", err)
		}
	})
}

// checkKernelError checks err's message, and that it matches exactly one
// of ErrNotSupported (notSupp) and fs.ErrNotExist, and repeats no prefix.
func checkKernelError(t *testing.T, err error, want string, notSupp bool) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
		return
	}
	if errors.Is(err, ErrNotSupported) != notSupp || errors.Is(err, fs.ErrNotExist) == notSupp {
		t.Errorf("%v: ErrNotSupported %v, fs.ErrNotExist %v; want %v, %v", err,
			errors.Is(err, ErrNotSupported), errors.Is(err, fs.ErrNotExist), notSupp, !notSupp)
	}
	if w := testutil.RepeatedPrefix(err.Error()); w != "" {
		t.Errorf("%q says %q twice", err, w)
	}
}

// TestIntegrationMissingSchedulerModule adds a service with the sh
// scheduler, alone and in a batch, beside another program's service. In the
// VM rig ip_vs_sh is there and both adds work; scripts/vmtest -without
// ip_vs_sh boots a guest that lacks it, where both must fail naming the
// module, as ErrNotSupported and not fs.ErrNotExist, and change nothing.
func TestIntegrationMissingSchedulerModule(t *testing.T) {
	leftOut, err := vm.LeftOut()
	if err != nil {
		t.Fatal(err)
	}
	missing := slices.Contains(leftOut, "ip_vs_sh")
	c, ns := newTestClient(t)
	theirs := []string{"-A -t 198.18.0.1:80 -s rr", "-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1"}
	ipvsadmRestore(t, ns, theirs...)
	ctx := context.Background()
	single := Service{Protocol: TCP, Addr: netip.MustParseAddr("198.18.0.1"), Port: 81, Scheduler: "sh"}
	batched := Service{Protocol: UDP, Addr: netip.MustParseAddr("2001:db8::1"), Port: 53, Scheduler: "sh"}
	err = c.AddService(ctx, single)
	var b Batch
	b.AddService(batched)
	berr := c.Apply(ctx, &b)
	t.Logf("ip_vs_sh left out: %v; AddService: %v; Apply: %v", missing, err, berr)
	if !missing {
		if err != nil || berr != nil {
			t.Fatalf("with ip_vs_sh: AddService %v, Apply %v; want both to work", err, berr)
		}
		diffLines(t, "virtual servers", append([]string{"-A -t 198.18.0.1:81 -s sh", "-A -u [2001:db8::1]:53 -s sh"}, theirs...), saved(t, ns))
		return
	}
	checkKernelError(t, err, `ipvs: add service tcp 198.18.0.1:81: scheduler "sh" not available (module ip_vs_sh)`, true)
	var be *BatchError
	if !errors.As(berr, &be) || len(be.Failed) != 1 {
		t.Fatalf("Apply = %v; want a *BatchError with its one request failed", berr)
	}
	checkKernelError(t, be.Failed[0].Err, `ipvs: add service udp [2001:db8::1]:53: scheduler "sh" not available (module ip_vs_sh)`, true)
	diffLines(t, "virtual servers", theirs, saved(t, ns))
}

// A reply the client cannot decode is named once as ipvs's: the decoders'
// errors carry no prefix of their own under the *Error that holds them.
func TestUndecodableReplySaysIPVSOnce(t *testing.T) {
	k := ServiceKey{Protocol: TCP, Addr: netip.MustParseAddr("198.18.100.1"), Port: 83}
	req := ipvsReq(cmdGetService, nil)
	req.Replies = []netlink.Message{{Data: []byte{1}}} // shorter than a genetlink header
	c, _ := scriptedClient(t, nlconntest.Call{Op: nlconntest.Execute, Requests: []nlconntest.Request{req}})
	_, err := c.GetService(context.Background(), k)
	if err == nil || !strings.HasPrefix(err.Error(), "ipvs: get service tcp 198.18.100.1:83: decoding") || strings.Count(err.Error(), "ipvs:") != 1 {
		t.Errorf("GetService of a short reply: %v; want one ipvs: prefix, then the op and what failed to decode", err)
	}
}
