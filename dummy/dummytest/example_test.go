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
	if _, err := l.Ensure(ctx, "vip0"); err != nil {
		return dummy.SyncResult{}, err
	}
	return l.Sync(ctx, "vip0", vips)
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
	// link add vip0 type dummy
	// link set vip0 alias ipvskit:ipvskit
	// link set vip0 arp off
	// address add 198.18.0.11/32 dev vip0
}

// Another program's link with the wanted name is refused, as the kernel
// client refuses it.
func ExampleFake_AddLink() {
	f := dummytest.New()
	if err := f.AddLink("vip0", "bridge"); err != nil {
		panic(err)
	}
	_, err := publish(context.Background(), f, nil)
	var le *dummy.LinkTypeError
	fmt.Println(errors.As(err, &le), le.Type)
	fmt.Println(err)
	// Output:
	// true bridge
	// dummy: ensure "vip0": link "vip0" exists and is of type "bridge", not dummy: not taking it over
}

// A dummy link of the wanted name that another program made (it lacks the
// owner's mark, the alias) is refused too, and left as it is.
func ExampleFake_AddLinkAlias() {
	f := dummytest.New()
	if err := f.AddLinkAlias("vip0", "dummy", "docker"); err != nil {
		panic(err)
	}
	_, err := publish(context.Background(), f, nil)
	var fe *dummy.ForeignError
	fmt.Println(errors.As(err, &fe), fe.Alias)
	fmt.Println(err)
	// Output:
	// true docker
	// dummy: ensure "vip0": dummy link "vip0" exists with alias "docker", not the mark "ipvskit:ipvskit": not ours, left as it is
}
