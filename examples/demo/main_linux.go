// Command demo shows ipvskit's proxier at work in throwaway network
// namespaces: it builds a node with a client and three backends, applies a
// State with a ClusterIP and a NodePort service, sends real traffic, prints
// who answered and the kernel's IPVS table with its counters, scales a
// service down (one request), and cleans up, showing nothing is left.
//
// It needs root and a kernel with IPVS and dummy links; `make demo` runs it
// inside the project's VM rig when this machine's kernel lacks them. It never
// touches the namespace it was started in.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/ipvs/ipvsadm"
	"github.com/ipvskit/ipvskit/proxier"
)

var (
	nodeAddr  = netip.MustParseAddr("198.18.10.1") // the node, as the client sees it
	clusterIP = netip.MustParseAddr("198.18.100.1")
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	step("building namespaces: a node, a client and three backends (veth, 198.18.0.0/15)")
	node, err := newNamespace("node")
	if err != nil {
		return err
	}
	defer node.close()
	client, err := newNamespace("client")
	if err != nil {
		return err
	}
	defer client.close()
	if err := link(node, "to-client", netip.MustParsePrefix("198.18.10.1/24"), client, "eth0", netip.MustParsePrefix("198.18.10.2/24")); err != nil {
		return err
	}
	var endpoints []proxier.Endpoint
	for i := 1; i <= 3; i++ {
		be, err := newNamespace(fmt.Sprintf("backend-%d", i))
		if err != nil {
			return err
		}
		defer be.close()
		nodeSide := netip.MustParsePrefix(fmt.Sprintf("198.18.%d.1/24", 10+i))
		beSide := netip.MustParsePrefix(fmt.Sprintf("198.18.%d.2/24", 10+i))
		if err := link(node, fmt.Sprintf("to-be%d", i), nodeSide, be, "eth0", beSide); err != nil {
			return err
		}
		stop, err := serveName(be, netip.AddrPortFrom(beSide.Addr(), 8080), be.name)
		if err != nil {
			return err
		}
		defer stop()
		endpoints = append(endpoints, proxier.Endpoint{Addr: beSide.Addr(), Ready: true})
	}

	step("starting the proxier in the node's namespace")
	// Every kernel client, for the namespace's file descriptor; the zero
	// Config: nftables, IPv4.
	p, err := proxier.Open(ctx, nil, node.h)
	if err != nil {
		return err
	}
	defer p.Close()
	// A client of our own to read the IPVS table, as ipvsadm would.
	ipvsc, err := ipvs.New(&ipvs.Config{NetNS: node.h})
	if err != nil {
		return err
	}
	defer ipvsc.Close()

	state := proxier.State{
		Node: proxier.Node{Addresses: []netip.Addr{nodeAddr}},
		Services: map[string]proxier.Service{
			"web": { // a ClusterIP service over all three backends
				ClusterIPs: []netip.Addr{clusterIP},
				Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080}},
				Endpoints:  endpoints,
			},
			"shop": { // a NodePort service over two of them
				ClusterIPs: []netip.Addr{netip.MustParseAddr("198.18.100.2")},
				Ports:      []proxier.Port{{Name: "http", Protocol: proxier.TCP, Port: 80, TargetPort: 8080, NodePort: 30080}},
				Endpoints:  endpoints[1:],
			},
		},
	}
	res, err := p.Sync(ctx, &state)
	if err != nil {
		return err
	}
	fmt.Printf("first sync: %d IPVS requests, %d VIPs bound, VIP link created: %v, %d sysctls changed\n",
		res.Plan.IPVSAdd.Len(), len(res.Plan.Bind), res.LinkCreated, len(res.SysctlChanges))

	step("30 requests from the client to the ClusterIP 198.18.100.1:80, and 30 to the NodePort 198.18.10.1:30080")
	if err := ask(client, netip.AddrPortFrom(clusterIP, 80), 30); err != nil {
		return err
	}
	if err := ask(client, netip.AddrPortFrom(nodeAddr, 30080), 30); err != nil {
		return err
	}

	step("the kernel's IPVS table (as ipvsadm -Ln --stats shows it)")
	if err := printTable(ctx, ipvsc, 60); err != nil {
		return err
	}

	step("scaling web down to two backends")
	web := state.Services["web"]
	web.Endpoints = endpoints[:2]
	state.Services["web"] = web
	if res, err = p.Sync(ctx, &state); err != nil {
		return err
	}
	fmt.Printf("that change cost %d IPVS request(s):\n%s", res.Plan.IPVSAdd.Len()+res.Plan.IPVSDelete.Len(), res.Plan)
	if err := ask(client, netip.AddrPortFrom(clusterIP, 80), 10); err != nil {
		return err
	}
	res, err = p.Sync(ctx, &state)
	if err != nil {
		return err
	}
	fmt.Printf("syncing the same state again sends nothing: plan empty = %v\n", res.Plan.Empty())

	step("cleaning up: Cleanup removes the virtual servers, the VIP link and the nftables table")
	if err := p.Cleanup(ctx); err != nil {
		return err
	}
	snap, err := ipvsc.Snapshot(ctx)
	if err != nil {
		return err
	}
	linkErr := node.do(func() error { _, err := net.InterfaceByName(proxier.DefaultLinkName); return err })
	fmt.Printf("left behind: %d virtual servers; VIP link: %v\n", len(snap.Services), linkErr)
	if len(snap.Services) != 0 || linkErr == nil {
		return fmt.Errorf("cleanup left something behind")
	}
	step("done: the namespaces go away as the demo exits")
	return nil
}

func step(s string) { fmt.Printf("\n== %s\n", s) }

// serveName answers every TCP connection to addr inside ns with name.
func serveName(ns *namespace, addr netip.AddrPort, name string) (stop func(), err error) {
	var ln net.Listener
	if err := ns.do(func() (err error) { ln, err = net.Listen("tcp", addr.String()); return err }); err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, name)
			c.Close()
		}
	}()
	return func() { ln.Close() }, nil
}

// ask connects n times from ns to addr and prints how many answers each
// backend gave.
func ask(ns *namespace, addr netip.AddrPort, n int) error {
	counts := map[string]int{}
	for range n {
		var reply []byte
		err := ns.do(func() error {
			c, err := net.DialTimeout("tcp", addr.String(), 10*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			reply, err = io.ReadAll(c)
			return err
		})
		if err != nil {
			return fmt.Errorf("request to %v: %w", addr, err)
		}
		counts[string(reply)]++
	}
	var names []string
	for name := range counts {
		names = append(names, name)
	}
	sort.Strings(names)
	var parts []string
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s answered %d", name, counts[name]))
	}
	fmt.Printf("%v: %s\n", addr, strings.Join(parts, ", "))
	return nil
}

// printTable prints the IPVS table with its counters, as ipvsadm -Ln --stats
// does. The kernel sums its per-CPU counters every two seconds, so it first
// waits (up to ten seconds) until they show the connections the demo made.
func printTable(ctx context.Context, c *ipvs.Client, conns uint64) error {
	var snap ipvs.Snapshot
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		var err error
		if snap, err = c.Snapshot(ctx); err != nil {
			return err
		}
		var total uint64
		for _, s := range snap.Services {
			total += s.Stats.Connections
		}
		if total >= conns || time.Now().After(deadline) {
			break
		}
	}
	info, err := c.Info(ctx)
	if err != nil {
		return err
	}
	return ipvsadm.WriteTable(os.Stdout, snap, ipvsadm.TableOptions{Format: ipvsadm.TableStats, Info: &info})
}
