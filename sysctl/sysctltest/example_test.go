package sysctltest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipvskit/ipvskit/sysctl"
	"github.com/ipvskit/ipvskit/sysctl/sysctltest"
)

// The code under test asks only for what it uses, so a *sysctl.Client or a
// *sysctltest.Fake will do.
type node interface {
	IPVSProfile(o *sysctl.IPVSOptions) (sysctl.Profile, error)
	Apply(ctx context.Context, p sysctl.Profile) ([]sysctl.Change, error)
}

func prepare(ctx context.Context, n node) ([]sysctl.Change, error) {
	p, err := n.IPVSProfile(&sysctl.IPVSOptions{NoBridgeNetfilter: true})
	if err != nil {
		return nil, err
	}
	return n.Apply(ctx, p)
}

func Example() {
	f := sysctltest.New("5.4.0-150-generic") // an old kernel: conn_reuse_mode is set too
	changes, err := prepare(context.Background(), f)
	if err != nil {
		panic(err)
	}
	for _, ch := range changes {
		fmt.Printf("%s %s -> %s\n", ch.Key, ch.Old, ch.New)
	}
	// Output:
	// net/ipv4/vs/conntrack 0 -> 1
	// net/ipv4/vs/conn_reuse_mode 1 -> 0
	// net/ipv4/vs/expire_nodest_conn 0 -> 1
	// net/ipv4/vs/expire_quiescent_template 0 -> 1
	// net/ipv4/ip_forward 0 -> 1
	// net/ipv4/conf/all/route_localnet 0 -> 1
}

// Without ip_vs loaded, Apply names the module and writes nothing.
func ExampleFake_Unload() {
	f := sysctltest.New("")
	f.Unload("net/ipv4/vs/")
	_, err := prepare(context.Background(), f)
	var ne *sysctl.NotExistError
	fmt.Println(errors.As(err, &ne), ne.Module, errors.Is(err, sysctl.ErrNotSupported), f.Writes())
	// Output:
	// true ip_vs true 0
}
