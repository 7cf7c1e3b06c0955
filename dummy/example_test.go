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
