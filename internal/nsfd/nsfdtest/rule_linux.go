package nsfdtest

import (
	"io"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Rule checks the documented values of a client's Config.NetNS with open
// (the client's New, given that value):
//
//   - 0 is the namespace of the thread that calls New: open runs on a
//     thread inside here, and the client, used from elsewhere, works in here;
//   - a positive descriptor is that namespace, even once the caller has
//     closed it right after New: the client works in there;
//   - netns.None() and other negative values make New fail, with an error
//     that invalid accepts (the package's typed validation error).
//
// use does something with the client and checks that it shows in in and
// not in notIn (whose foreign objects the caller set up and checks
// afterwards). Rule closes each client.
func Rule[C io.Closer](t *testing.T, here, there *testutil.NetNS,
	open func(ns netns.NsHandle) (C, error),
	use func(t *testing.T, c C, in, notIn *testutil.NetNS),
	invalid func(err error) bool) {
	t.Helper()
	t.Run("zero is the calling thread's", func(t *testing.T) {
		var (
			c   C
			err error
		)
		here.Do(t, func() { c, err = open(0) })
		if err != nil {
			t.Fatalf("New with NetNS 0 on a thread in the test namespace: %v", err)
		}
		defer c.Close()
		use(t, c, here, there)
	})
	t.Run("a descriptor the caller closes after New", func(t *testing.T) {
		fd, err := unix.Dup(int(there.Handle()))
		if err != nil {
			t.Fatal(err)
		}
		c, err := open(netns.NsHandle(fd))
		unix.Close(fd)
		if err != nil {
			t.Fatalf("New with NetNS %d: %v", fd, err)
		}
		defer c.Close()
		use(t, c, there, here)
	})
	t.Run("negative is refused", func(t *testing.T) {
		for _, ns := range []netns.NsHandle{netns.None(), -2} {
			c, err := open(ns)
			if err == nil {
				c.Close()
			}
			if !invalid(err) {
				t.Errorf("New with NetNS %d: %v; want the package's validation error naming Config.NetNS", ns, err)
			}
		}
	})
}
