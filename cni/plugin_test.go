package cni

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

const stanza = `{"cniVersion": "1.0.0", "name": "n", "type": "ipvskit",
	"services": [{"vip": "198.18.100.1", "port": 80, "backends": ["198.18.1.1"]}]}`

func TestTwoPortsOfOneVIPAreTwoServices(t *testing.T) {
	conf, err := Parse([]byte(`{"cniVersion": "1.0.0", "services": [
		{"vip": "198.18.100.1", "port": 80}, {"vip": "198.18.100.1", "port": 443}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(conf.State().Services); n != 2 {
		t.Errorf("%d services, want 2", n)
	}
}

// TestDelOfAGoneNamespaceSucceeds: DEL of a namespace that no longer
// exists, of one whose bind mount is undone (a plain file), or of none, is
// success, as the CNI spec asks, and touches nothing.
func TestDelOfAGoneNamespaceSucceeds(t *testing.T) {
	dir := t.TempDir()
	unmounted := filepath.Join(dir, "unmounted")
	if err := os.WriteFile(unmounted, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{filepath.Join(dir, "no-such-netns"), unmounted, ""} {
		if err := Del(&skel.CmdArgs{ContainerID: "c", Netns: ns, IfName: "eth0", StdinData: []byte(stanza)}); err != nil {
			t.Errorf("DEL of %q: %v", ns, err)
		}
	}
}

func TestCommandsRefuseWithCNICodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-netns")
	for _, tc := range []struct {
		name string
		cmd  func(*skel.CmdArgs) error
		args skel.CmdArgs
		code uint
		want string
	}{
		{"ADD of a malformed stanza", Add, skel.CmdArgs{Netns: missing, StdinData: []byte(`{"services": [{"vip": "x", "port": 80}]}`)},
			types.ErrInvalidNetworkConfig, `services[0].vip: "x"`},
		{"DEL of a malformed stanza", Del, skel.CmdArgs{Netns: missing, StdinData: []byte(`{"services": 3}`)},
			types.ErrDecodingFailure, "decoding"},
		{"ADD into a namespace that is not there", Add, skel.CmdArgs{Netns: missing, StdinData: []byte(stanza)},
			types.ErrInvalidNetNS, missing},
		{"ADD without a namespace", Add, skel.CmdArgs{StdinData: []byte(stanza)},
			types.ErrInvalidEnvironmentVariables, "CNI_NETNS"},
		{"CHECK of a namespace that is not there", Check, skel.CmdArgs{Netns: missing, StdinData: []byte(stanza)},
			types.ErrInvalidNetNS, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cmd(&tc.args)
			var ce *types.Error
			if !errors.As(err, &ce) || ce.Code != tc.code || !strings.Contains(ce.Msg, tc.want) {
				t.Errorf("got %#v, want code %d mentioning %q", err, tc.code, tc.want)
			}
		})
	}
}

func TestAsCNIError(t *testing.T) {
	ve := &proxier.ValidationError{Problems: []proxier.Problem{{Path: "netns", Value: "-1", Msg: "is not a namespace"}}}
	for _, tc := range []struct {
		err  error
		code uint
	}{
		{types.NewError(types.ErrInvalidNetNS, "x", ""), types.ErrInvalidNetNS},
		{errors.Join(errors.New("in /x"), ve), types.ErrInvalidNetworkConfig},
		{errors.New("the kernel said no"), types.ErrInternal},
	} {
		var ce *types.Error
		if !errors.As(asCNIError(tc.err), &ce) || ce.Code != tc.code {
			t.Errorf("asCNIError(%v) = %v, want code %d", tc.err, ce, tc.code)
		}
	}
	if err := asCNIError(nil); err != nil {
		t.Errorf("asCNIError(nil) = %v", err)
	}
}

func TestDriftListsTheRepairs(t *testing.T) {
	if d := drift(&proxier.Plan{}, &proxier.ReconcileReport{}); len(d) != 0 {
		t.Errorf("drift of an empty plan and report = %q, want none", d)
	}
	pl := &proxier.Plan{}
	pl.IPVSAdd.AddService(ipvs.Service{Family: ipvs.IPv4, Protocol: ipvs.TCP, Addr: netip.MustParseAddr("198.18.100.1"), Port: 80, Scheduler: "rr"})
	pl.Bind = append(pl.Bind, netip.MustParseAddr("198.18.100.1"))
	rep := &proxier.ReconcileReport{Drift: []proxier.Drift{{Subsystem: proxier.SubsystemSysctl, Object: "net/ipv4/vs/conntrack", Problem: "0, want 1"}}}
	got := joinDrift(drift(pl, rep))
	for _, w := range []string{"ipvsadm -A -t 198.18.100.1:80 -s rr", "VIP 198.18.100.1: missing", "net/ipv4/vs/conntrack: 0, want 1"} {
		if !strings.Contains(got, w) {
			t.Errorf("drift %q lacks %q", got, w)
		}
	}
}
