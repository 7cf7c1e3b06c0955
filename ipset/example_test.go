package ipset_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/ipvskit/ipvskit/inet"
	"github.com/ipvskit/ipvskit/ipset"
)

func ExampleClient_Replace() {
	ctx := context.Background()
	c, err := ipset.New(nil) // the calling thread's network namespace
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	set := ipset.Set{Name: "SERVICES", Type: ipset.HashIPPort}
	err = c.Replace(ctx, set, []ipset.Entry{
		{IP: netip.MustParseAddr("198.18.0.10"), Proto: ipset.TCP, Port: 80},
	})
	if err != nil {
		fmt.Println(err)
	}
}

func ExampleWriteText() {
	sets := []ipset.SetInfo{{
		Set:     ipset.Set{Name: "KUBE-NODE-PORT-TCP", Type: ipset.BitmapPort},
		Entries: []ipset.Entry{{Port: 30080}, {Port: 30443}},
	}, {
		Set: ipset.Set{Name: "KUBE-LOOP-BACK", Type: ipset.HashIPPortIP, Family: inet.IPv6},
		Entries: []ipset.Entry{{
			IP: netip.MustParseAddr("2001:db8::5"), Proto: ipset.TCP, Port: 8080, IP2: netip.MustParseAddr("2001:db8::5"),
		}},
	}}
	if err := ipset.WriteText(os.Stdout, sets); err != nil {
		fmt.Println(err)
	}
	// Output:
	// create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
	// add KUBE-NODE-PORT-TCP 30080
	// add KUBE-NODE-PORT-TCP 30443
	// create KUBE-LOOP-BACK hash:ip,port,ip family inet6
	// add KUBE-LOOP-BACK 2001:db8::5,tcp:8080,2001:db8::5
}

func ExampleParseText() {
	sets, err := ipset.ParseText(strings.NewReader(
		"create S hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1\n" +
			"add S 198.18.0.10,udp:53\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sets[0].Name, sets[0].Type, sets[0].Entries[0].IP, sets[0].Entries[0].Proto, sets[0].Entries[0].Port)
	// Output: S hash:ip,port 198.18.0.10 udp 53
}
