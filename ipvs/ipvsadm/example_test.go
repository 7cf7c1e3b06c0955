package ipvsadm_test

import (
	"context"
	"log"
	"net/netip"
	"os"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
)

// Print the namespace's IPVS table as `ipvsadm -Ln` prints it, version line
// included.
func ExampleWriteTable() {
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
	if err := ipvsadm.WriteTable(os.Stdout, snap, ipvsadm.TableOptions{Info: &info}); err != nil {
		log.Fatal(err)
	}
}

// The counters, as `ipvsadm -Ln --stats` prints them: large numbers in
// thousands (K), millions (M) or more, unless Exact is set.
func ExampleWriteTable_stats() {
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
	if err := ipvsadm.WriteTable(os.Stdout, snap, ipvsadm.TableOptions{Format: ipvsadm.TableStats}); err != nil {
		log.Fatal(err)
	}
	if err := ipvsadm.WriteTable(os.Stdout, snap, ipvsadm.TableOptions{Format: ipvsadm.TableStats, Exact: true}); err != nil {
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
