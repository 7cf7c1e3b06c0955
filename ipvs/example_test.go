package ipvs_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net/netip"
	"os"
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

// Print the namespace's IPVS table as `ipvsadm -Ln` prints it, version line
// included.
func ExampleSnapshot_WriteTable() {
	c, err := ipvs.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	info, err := c.Info(ctx)
	if err != nil {
		log.Fatal(err)
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := snap.WriteTable(os.Stdout, ipvs.TableOptions{Info: &info}); err != nil {
		log.Fatal(err)
	}
}

// The counters, as `ipvsadm -Ln --stats` prints them: large numbers in
// thousands (K), millions (M) or more, unless Exact is set.
func ExampleSnapshot_WriteTable_stats() {
	snap := ipvs.Snapshot{Services: []ipvs.ServiceSnapshot{{
		ServiceInfo: ipvs.ServiceInfo{
			Service: ipvs.Service{Protocol: ipvs.TCP, Addr: netip.MustParseAddr("198.18.0.1"), Port: 80, Scheduler: "rr"},
			Stats:   ipvs.Stats{Connections: 60, PacketsIn: 360, BytesIn: 123_456_789},
		},
		Destinations: []ipvs.DestinationInfo{
			{Destination: ipvs.Destination{Addr: netip.MustParseAddr("198.18.1.2"), Port: 8080, Weight: 1},
				Stats: ipvs.Stats{Connections: 20, PacketsIn: 120, BytesIn: 41_152_263}},
			{Destination: ipvs.Destination{Addr: netip.MustParseAddr("198.18.1.1"), Port: 8080, Weight: 2},
				Stats: ipvs.Stats{Connections: 40, PacketsIn: 240, BytesIn: 82_304_526}},
		},
	}}}
	if err := snap.WriteTable(os.Stdout, ipvs.TableOptions{Format: ipvs.TableStats}); err != nil {
		log.Fatal(err)
	}
	if err := snap.WriteTable(os.Stdout, ipvs.TableOptions{Format: ipvs.TableStats, Exact: true}); err != nil {
		log.Fatal(err)
	}
	// Output:
	// Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes
	//   -> RemoteAddress:Port
	// TCP  198.18.0.1:80                      60      360        0  123456K        0
	//   -> 198.18.1.1:8080                    40      240        0 82304526        0
	//   -> 198.18.1.2:8080                    20      120        0 41152263        0
	// Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes
	//   -> RemoteAddress:Port
	// TCP  198.18.0.1:80                      60      360        0 123456789        0
	//   -> 198.18.1.1:8080                    40      240        0 82304526        0
	//   -> 198.18.1.2:8080                    20      120        0 41152263        0
}
