package healthcheck_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/ipvskit/ipvskit/healthcheck"
)

// A web server checked by HTTP: its state changes arrive as events.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()

	events := make(chan healthcheck.Event[string], 16)
	c, err := healthcheck.New(&healthcheck.Config[string]{
		Notify: func(ev healthcheck.Event[string]) { events <- ev }, // never blocks for long
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	err = c.Set("web-1", healthcheck.Target{
		Addr: netip.MustParseAddrPort(srv.Listener.Addr().String()),
		Check: healthcheck.Check{
			Type:     healthcheck.HTTP,
			Interval: 100 * time.Millisecond,
			Timeout:  50 * time.Millisecond,
			Rise:     2,
			Fall:     3,
			HTTP:     healthcheck.HTTPCheck{Path: "/healthz", Host: "web.example", Body: "ok"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ev := <-events
	fmt.Println(ev.Key, ev.Old, "->", ev.New)

	// A bad check is refused before anything runs.
	err = c.Set("web-2", healthcheck.Target{Check: healthcheck.Check{Type: healthcheck.TCP, Rise: 1, Fall: 1}})
	fmt.Println(err)
	// Output:
	// web-1 unknown -> up
	// healthcheck: invalid Target.Check.Interval: "0s": want more than 0
}
