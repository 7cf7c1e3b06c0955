package dummytest_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/ipvskit/ipvskit/dummy/dummytest"
)

// The code under test asks only for what it uses, so a *dummy.Client or a
// *dummytest.Fake will do.
type vipLink interface {
	Ensure(ctx context.Context, name string) (bool, error)
	Sync(ctx context.Context, name string, wanted []netip.Addr) (dummy.SyncResult, error)
}

func publish(ctx context.Context, l vipLink, vips []netip.Addr) (dummy.SyncResult, error) {
	if _, err := l.Ensure(ctx, "kube-ipvs0"); err != nil {
		return dummy.SyncResult{}, err
	}
	return l.Sync(ctx, "kube-ipvs0", vips)
}

func Example() {
	f := dummytest.New()
	ctx := context.Background()
	res, _ := publish(ctx, f, []netip.Addr{netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("2001:db8::10")})
	fmt.Println("added", res.Added)
	res, _ = publish(ctx, f, []netip.Addr{netip.MustParseAddr("198.18.0.11")})
	fmt.Println("added", res.Added, "removed", res.Removed)
	fmt.Print(f.Dump())
	// Output:
	// added [198.18.0.10/32 2001:db8::10/128]
	// added [198.18.0.11/32] removed [198.18.0.10/32 2001:db8::10/128]
	// link add kube-ipvs0 type dummy
	// link set kube-ipvs0 arp off
	// address add 198.18.0.11/32 dev kube-ipvs0
}

// Another program's link with the wanted name is refused, as the kernel
// client refuses it.
func ExampleFake_AddLink() {
	f := dummytest.New()
	if err := f.AddLink("kube-ipvs0", "bridge"); err != nil {
		panic(err)
	}
	_, err := publish(context.Background(), f, nil)
	var le *dummy.LinkTypeError
	fmt.Println(errors.As(err, &le), le.Type)
	fmt.Println(err)
	// Output:
	// true bridge
	// dummy: ensure "kube-ipvs0": link "kube-ipvs0" exists and is of type "bridge", not dummy: not taking it over
}
