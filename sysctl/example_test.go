package sysctl_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/vishvananda/netns"
)

// Apply the IPVS profile in the current namespace.
func Example() {
	c, err := sysctl.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	p, err := c.IPVSProfile(&sysctl.IPVSOptions{StrictARP: true})
	if err != nil {
		log.Fatal(err)
	}
	changes, err := c.Apply(context.Background(), p)
	var ne *sysctl.NotExistError
	if errors.As(err, &ne) {
		log.Fatalf("%s is missing: load module %s", ne.Key, ne.Module)
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, ch := range changes {
		fmt.Printf("%s: %s -> %s\n", ch.Key, ch.Old, ch.New)
	}
}

// Read a key in a named network namespace.
func ExampleClient_Get() {
	h, err := netns.GetFromName("blue")
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	c, err := sysctl.New(&sysctl.Config{NetNS: h})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	v, err := c.Get(context.Background(), "net.ipv4.ip_forward")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("forwarding:", v)
}

// The profile depends on the kernel: conn_reuse_mode only before 5.9.
func ExampleIPVSProfile() {
	for _, v := range []sysctl.KernelVersion{{Major: 5, Minor: 4}, {Major: 6, Minor: 1}} {
		p, _ := sysctl.IPVSProfile(v, &sysctl.IPVSOptions{NoBridgeNetfilter: true})
		fmt.Println(v)
		for _, s := range p {
			fmt.Printf("  %s = %s\n", s.Key, s.Value)
		}
	}
	// Output:
	// 5.4.0
	//   net/ipv4/vs/conntrack = 1
	//   net/ipv4/vs/conn_reuse_mode = 0
	//   net/ipv4/vs/expire_nodest_conn = 1
	//   net/ipv4/vs/expire_quiescent_template = 1
	//   net/ipv4/ip_forward = 1
	//   net/ipv4/conf/all/route_localnet = 1
	// 6.1.0
	//   net/ipv4/vs/conntrack = 1
	//   net/ipv4/vs/expire_nodest_conn = 1
	//   net/ipv4/vs/expire_quiescent_template = 1
	//   net/ipv4/ip_forward = 1
	//   net/ipv4/conf/all/route_localnet = 1
}

func ExampleNormalizeKey() {
	for _, k := range []string{"net.ipv4.conf.eth0/100.arp_ignore", "net/ipv4/ip_forward", "kernel.hostname"} {
		fmt.Println(sysctl.NormalizeKey(k))
	}
	// Output:
	// net/ipv4/conf/eth0.100/arp_ignore <nil>
	// net/ipv4/ip_forward <nil>
	//  sysctl: invalid key "kernel.hostname": not a per-namespace key: only keys below net/ are allowed
}
