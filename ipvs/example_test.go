package ipvs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net/netip"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/vishvananda/netns"
)

// Open a client for another network namespace (here one named with
// ip netns add); the handle may be closed once New returns.
func ExampleNew_netns() {
	h, err := netns.GetFromName("lb")
	if err != nil {
		log.Fatal(err)
	}
	c, err := ipvs.New(&ipvs.Config{NetNS: h})
	h.Close()
	if errors.Is(err, ipvs.ErrNotSupported) {
		log.Fatal("no IPVS in this kernel: ", err)
	} else if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	svcs, err := c.Services(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(svcs), "services")
}

// Create a service with its destinations in one batch: few system calls and
// one kernel ack per send, however many requests.
func ExampleClient_Apply() {
	c, err := ipvs.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	svc := ipvs.Service{
		Protocol:    ipvs.TCP,
		Addr:        netip.MustParseAddr("198.18.0.1"),
		Port:        443,
		Scheduler:   "mh",
		SchedFlags:  ipvs.MHFallback | ipvs.MHPort,
		Persistence: ipvs.Persistence{Timeout: 300 * time.Second, PrefixLen: 24}, // per /24
	}
	var b ipvs.Batch
	b.AddService(svc)
	for i := range 10 {
		b.AddDestination(svc.Key(), ipvs.Destination{
			Addr:   netip.AddrFrom4([4]byte{198, 18, 1, byte(i + 1)}),
			Port:   8443,
			Weight: 1,
		})
	}
	err = c.Apply(context.Background(), &b)
	var be *ipvs.BatchError
	switch {
	case errors.As(err, &be):
		for _, f := range be.Failed {
			fmt.Printf("request %d (%v) failed: %v\n", f.Index, f.Op.Kind, f.Err)
		}
	case err != nil:
		log.Fatal(err) // invalid input: nothing was sent
	}
}

// Read a service's counters and its destinations' connection counts.
func ExampleClient_GetService() {
	c, err := ipvs.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	k := ipvs.ServiceKey{Protocol: ipvs.TCP, Addr: netip.MustParseAddr("198.18.0.1"), Port: 443}
	info, err := c.GetService(ctx, k)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Println("no such service")
		return
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%v: %d connections, %d bytes in, %d bytes out\n",
		k, info.Stats.Connections, info.Stats.BytesIn, info.Stats.BytesOut)

	dests, err := c.Destinations(ctx, k)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range dests {
		fmt.Printf("  %v weight %d: %d active, %d inactive\n", d.Key(), d.Weight, d.ActiveConns, d.InactiveConns)
	}
}
