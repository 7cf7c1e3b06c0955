package ipsettest_test

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"testing"

	"github.com/ipvskit/ipvskit/ipset"
	"github.com/ipvskit/ipvskit/ipset/internal/contract"
	"github.com/ipvskit/ipvskit/ipset/ipsettest"
)

// Both the Client and the Fake have the method set the contract drives.
var (
	_ contract.Sets = (*ipset.Client)(nil)
	_ contract.Sets = (*ipsettest.Fake)(nil)
)

func ep(ip string, port uint16) ipset.Entry {
	return ipset.Entry{IP: netip.MustParseAddr(ip), Proto: ipset.TCP, Port: port}
}

func TestFakeSemantics(t *testing.T) {
	ctx := context.Background()
	f := ipsettest.New()
	s := ipset.Set{Name: "a", Type: ipset.HashIPPort, MaxElem: 2}
	if err := f.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := f.Create(ctx, s); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second create: %v", err)
	}
	if err := f.Ensure(ctx, s); err != nil {
		t.Errorf("ensure of the same set: %v", err)
	}
	if err := f.Add(ctx, "a", ep("198.18.0.1", 1), ep("198.18.0.1", 1)); err != nil {
		t.Fatal(err)
	}
	if err := f.AddStrict(ctx, "a", ep("198.18.0.1", 1)); !errors.Is(err, ipset.ErrElementExists) {
		t.Errorf("strict add of a member: %v", err)
	}
	if err := f.Add(ctx, "a", ep("198.18.0.2", 2), ep("198.18.0.3", 3)); !errors.Is(err, ipset.ErrSetFull) {
		t.Errorf("add beyond maxelem: %v", err)
	}
	var ve *ipset.ValidationError
	if err := f.Add(ctx, "a", ep("2001:db8::1", 1)); !errors.As(err, &ve) || ve.Field != "entries[0].IP" {
		t.Errorf("add of an IPv6 entry to an IPv4 set: %v", err)
	}
	if err := f.DelStrict(ctx, "a", ep("198.18.0.9", 9)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("strict del of a non-member: %v", err)
	}
	if err := f.Reference("a"); err != nil {
		t.Fatal(err)
	}
	if err := f.Destroy(ctx, "a"); !errors.Is(err, ipset.ErrInUse) {
		t.Errorf("destroy of a referenced set: %v", err)
	}
	if err := f.Create(ctx, ipset.Set{Name: "b", Type: ipset.HashIP}); err != nil {
		t.Fatal(err)
	}
	if err := f.Swap(ctx, "a", "b"); !errors.Is(err, ipset.ErrTypeMismatch) {
		t.Errorf("swap of different types: %v", err)
	}
	if err := f.Replace(ctx, s, []ipset.Entry{ep("198.18.0.1", 1), ep("198.18.0.2", 2), ep("198.18.0.3", 3)}); !errors.As(err, &ve) {
		t.Errorf("Replace beyond maxelem: %v", err)
	}
	if err := f.Replace(ctx, s, []ipset.Entry{ep("198.18.0.7", 7)}); err != nil {
		t.Fatal(err)
	}
	want := "create a hash:ip,port family inet hashsize 1024 maxelem 2\n" +
		"add a 198.18.0.7,tcp:7\n" +
		"create b hash:ip family inet hashsize 1024 maxelem 65536\n"
	if got := f.Dump(); got != want {
		t.Errorf("Dump:\n got %q\nwant %q", got, want)
	}
	if h, _ := f.Header(ctx, "a"); h.References != 1 || h.Elements != 1 {
		t.Errorf("header: %+v", h)
	}
}
