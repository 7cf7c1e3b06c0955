package agent

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/ipvskit/ipvskit/internal/testutil"
)

// TestKernelListensInItsNamespace: a listener from Kernel.Listen is in the
// kernel's namespace, reachable there and not in the test's own.
func TestKernelListensInItsNamespace(t *testing.T) {
	ns := testutil.NewNetNS(t)
	k := &Kernel{ns: ns.Handle()}
	l, err := k.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A connection completes in the listener's backlog: no Accept needed.
	addr := l.Addr().String()
	ns.Do(t, func() { err = dialOnce(addr) })
	if err != nil {
		t.Errorf("dialing %s inside the kernel's namespace: %v", addr, err)
	}
	if err := dialOnce(addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dialing %s in the test's own namespace: %v, want connection refused", addr, err)
	}
}

func dialOnce(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}
