package proxier_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ipvskit/ipvskit/proxier"
)

// Before a node agent changes anything, it asks whether the kernel has all
// a Proxier for its Config needs, and tells the operator every module to
// load at once, rather than failing on the first at the first Sync.
func ExamplePreflight() {
	ctx := context.Background()
	cfg := &proxier.Config{Families: []proxier.Family{proxier.IPv4, proxier.IPv6}}
	err := proxier.Preflight(ctx, cfg, 0, &proxier.PreflightOptions{Schedulers: []string{"rr", "mh"}})
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			var missing *proxier.UnsupportedFeatureError
			if errors.As(e, &missing) {
				fmt.Printf("missing %s: load module %s\n", missing.Feature, missing.Module)
			} else {
				fmt.Println("cannot check:", e)
			}
		}
		log.Fatal("the kernel lacks what the proxier needs")
	} else if err != nil {
		log.Fatal(err) // an invalid Config: a *proxier.ValidationError
	}
	// Every feature is there: build the clients and the Proxier.
}
