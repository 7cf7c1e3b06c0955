// Command vipbench measures what binding N IPv4 VIPs costs on a dummy link
// held as addresses and as local routes, through package dummy (Update,
// UpdateRoutes) and through `ip -batch` of the same addresses or routes.
// Each side of each run starts in a fresh network namespace (made with
// `ip netns add`) on a new, down, NOARP dummy link; the sides are
// interleaved run by run. It must run as root where dummy links exist (the
// VM rig: vmexec).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netns"

	"github.com/ipvskit/ipvskit/dummy"
)

const link = "vips0"

func main() {
	sizes := flag.String("n", "10000,20000", "comma-separated VIP counts")
	runs := flag.Int("runs", 1, "runs per side and count")
	flag.Parse()
	os.Setenv("PATH", "/usr/sbin:/sbin:/usr/bin:/bin") // ip(8) in the guest
	ctx := context.Background()
	sides := []struct {
		name string
		f    func(ctx context.Context, ns string, vips []netip.Addr) (time.Duration, error)
	}{
		{"dummy Update (addresses)", viaClient(false)},
		{"dummy UpdateRoutes (routes)", viaClient(true)},
		{"ip -batch address add", viaIP(false)},
		{"ip -batch route add local", viaIP(true)},
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			log.Fatal(err)
		}
		vips := make([]netip.Addr, n)
		for i := range vips {
			vips[i] = netip.AddrFrom4([4]byte{198, 18, byte((i + 1) >> 8), byte(i + 1)})
		}
		times := make([][]time.Duration, len(sides))
		for r := range *runs {
			for i, side := range sides {
				ns := fmt.Sprintf("vipbench-%d-%d", r, i)
				d, err := side.f(ctx, ns, vips)
				if err != nil {
					log.Fatalf("%s, %d VIPs: %v", side.name, n, err)
				}
				times[i] = append(times[i], d)
			}
		}
		fmt.Printf("\n%d VIPs, %d run(s):\n", n, *runs)
		fmt.Printf("| side | median | / dummy UpdateRoutes |\n|---|---|---|\n")
		med := func(ds []time.Duration) time.Duration {
			ds = slices.Clone(ds)
			slices.Sort(ds)
			return ds[len(ds)/2]
		}
		base := med(times[1])
		for i, side := range sides {
			m := med(times[i])
			fmt.Printf("| %s | %v | %.1f |\n", side.name, m.Round(time.Millisecond), float64(m)/float64(base))
		}
	}
}

// fresh makes network namespace name with lo up and a new dummy link,
// calls f with a Client working there, checks that the link then holds
// want VIPs as addresses or routes, and deletes the namespace.
func fresh(ctx context.Context, name string, routes bool, want int, f func(c *dummy.Client) (time.Duration, error)) (time.Duration, error) {
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("ip netns add: %v: %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", name).Run()
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("lo up: %v: %s", err, out)
	}
	h, err := netns.GetFromName(name)
	if err != nil {
		return 0, err
	}
	c, err := dummy.New(&dummy.Config{NetNS: h})
	h.Close()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Ensure(ctx, link); err != nil {
		return 0, err
	}
	d, err := f(c)
	if err != nil {
		return 0, err
	}
	var got int
	if routes {
		as, err := c.Routes(ctx, link)
		if err != nil {
			return 0, err
		}
		got = len(as)
	} else {
		ps, err := c.Addrs(ctx, link)
		if err != nil {
			return 0, err
		}
		got = len(ps)
	}
	if got != want {
		return 0, fmt.Errorf("the link holds %d VIPs, want %d", got, want)
	}
	return d, nil
}

func viaClient(routes bool) func(ctx context.Context, ns string, vips []netip.Addr) (time.Duration, error) {
	return func(ctx context.Context, ns string, vips []netip.Addr) (time.Duration, error) {
		return fresh(ctx, ns, routes, len(vips), func(c *dummy.Client) (time.Duration, error) {
			start := time.Now()
			var err error
			if routes {
				err = c.UpdateRoutes(ctx, link, vips, nil)
			} else {
				err = c.Update(ctx, link, vips, nil)
			}
			return time.Since(start), err
		})
	}
}

func viaIP(routes bool) func(ctx context.Context, ns string, vips []netip.Addr) (time.Duration, error) {
	return func(ctx context.Context, ns string, vips []netip.Addr) (time.Duration, error) {
		var b strings.Builder
		for _, a := range vips {
			if routes {
				fmt.Fprintf(&b, "route add local %s/32 dev %s table local proto %d scope host\n", a, link, dummy.RouteProtocol)
			} else {
				fmt.Fprintf(&b, "address add %s/32 dev %s\n", a, link)
			}
		}
		f, err := os.CreateTemp("", "vipbench-*.batch")
		if err != nil {
			return 0, err
		}
		defer os.Remove(f.Name())
		if _, err := f.WriteString(b.String()); err != nil {
			return 0, err
		}
		f.Close()
		return fresh(ctx, ns, routes, len(vips), func(*dummy.Client) (time.Duration, error) {
			start := time.Now()
			out, err := exec.Command("ip", "-n", ns, "-batch", f.Name()).CombinedOutput()
			if err != nil {
				return 0, fmt.Errorf("ip -batch: %v: %s", err, out)
			}
			return time.Since(start), nil
		})
	}
}
