package healthcheck

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
)

// farmEnv, when set in the test binary's environment, makes it a server
// farm instead of a test run: the benchmark starts it as a child process,
// so that the servers' CPU time is not counted as the checker's.
const farmEnv = "IPVSKIT_HEALTHCHECK_FARM"

func TestMain(m *testing.M) {
	if os.Getenv(farmEnv) != "" {
		if err := runFarm(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Farm size: listeners on 127.0.1.1 to 127.0.1.farmAddrs, farmPerAddr TCP
// and farmPerAddr HTTP ones on each.
const (
	farmAddrs   = 100
	farmPerAddr = 2
)

// runFarm starts the servers, writes one line per listener ("tcp ADDR" or
// "http ADDR") and "ready", and serves until in is closed.
func runFarm(in io.Reader, out io.Writer) error {
	w := bufio.NewWriter(out)
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	for i := 1; i <= farmAddrs; i++ {
		for range farmPerAddr {
			for _, kind := range []string{"tcp", "http"} {
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.1.%d:0", i))
				if err != nil {
					return err
				}
				if kind == "http" {
					go http.Serve(l, mux)
				} else {
					go acceptAndClose(l)
				}
				fmt.Fprintln(w, kind, l.Addr())
			}
		}
	}
	fmt.Fprintln(w, "ready")
	if err := w.Flush(); err != nil {
		return err
	}
	io.Copy(io.Discard, in)
	return nil
}

func acceptAndClose(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
