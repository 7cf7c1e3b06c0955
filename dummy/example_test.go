package dummy_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net/netip"

	"github.com/ipvskit/ipvskit/dummy"
	"github.com/vishvananda/netns"
)

// Keep exactly the wanted VIPs on kube-ipvs0 in the current namespace.
func Example() {
	c, err := dummy.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	if _, err := c.Ensure(ctx, "kube-ipvs0"); err != nil {
		log.Fatal(err)
	}
	res, err := c.Sync(ctx, "kube-ipvs0", []netip.Addr{
		netip.MustParseAddr("198.18.0.10"),
		netip.MustParseAddr("2001:db8::10"),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("bound", res.Added, "unbound", res.Removed)
}

// Work in another network namespace, for example a container's.
func ExampleNew_netns() {
	h, err := netns.GetFromPath("/run/netns/blue")
	if err != nil {
		log.Fatal(err)
	}
	c, err := dummy.New(&dummy.Config{NetNS: h})
	h.Close() // the Client has what it needs
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

// Bind one address, tolerating that it is already there.
func ExampleClient_Bind() {
	c, err := dummy.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	err = c.Bind(context.Background(), "kube-ipvs0", netip.MustParseAddr("198.18.0.10"))
	var ve *dummy.ValidationError
	switch {
	case errors.Is(err, fs.ErrExist):
		// already bound
	case errors.As(err, &ve):
		log.Fatalf("bad %s: %s", ve.Field, ve.Value)
	case err != nil:
		log.Fatal(err)
	}
}

// A name that belongs to another program's link is reported, never taken
// over.
func ExampleLinkTypeError() {
	c, err := dummy.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.Ensure(context.Background(), "cni0")
	var le *dummy.LinkTypeError
	if errors.As(err, &le) {
		fmt.Printf("%s is a %s link; choose another name\n", le.Name, le.Type)
	}
}

// Hold VIPs as local routes on the link instead of addresses: adding ten
// thousand costs a few sends, and the kernel's cost per route does not grow
// with their number. Only the Client's own routes are listed and removed.
func ExampleClient_UpdateRoutes() {
	c, err := dummy.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Ensure(ctx, "vips0"); err != nil {
		log.Fatal(err)
	}
	add := []netip.Addr{netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("2001:db8::10")}
	// ip route add local 198.18.0.10/32 dev vips0 table local proto 173 scope host, ...
	if err := c.UpdateRoutes(ctx, "vips0", add, nil); err != nil {
		log.Fatal(err)
	}
	held, err := c.Routes(ctx, "vips0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held as routes:", held)
	// Adding what is there and removing what is not are no errors.
	if err := c.UpdateRoutes(ctx, "vips0", nil, held); err != nil {
		log.Fatal(err)
	}
}
