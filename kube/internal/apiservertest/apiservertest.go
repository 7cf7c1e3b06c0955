// Package apiservertest runs a real Kubernetes API server for tests: the
// test-apiserver program (kube/testapiserver), which embeds etcd and
// kube-apiserver, both on 127.0.0.1 only.
//
// The program is built once per machine by scripts/test-apiserver, which
// prints its path; tests find it in the environment variable
// IPVSKIT_TEST_APISERVER (make test exports it) and skip without it:
//
//	bin=$(scripts/test-apiserver)
//	cd kube && IPVSKIT_TEST_APISERVER=$bin go test ./...
//
// A test starts a server, talks to it with client-go, and can take the API
// server down and up again while etcd keeps the objects:
//
//	func TestAgent(t *testing.T) {
//		s := apiservertest.Start(t) // stopped by t.Cleanup
//		svc, err := s.Client().CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
//		...
//		s.Stop(t)  // requests are refused, open watches end
//		s.Start(t) // same URL, same kubeconfig, same objects
//	}
//
// Each server has its own directory (t.TempDir), etcd and ports. The
// kubeconfig (Kubeconfig) holds the server URL, its CA and a client
// certificate in group system:masters; it stays valid across Stop and Start.
// Starting takes seconds; the program's log is shown when the test fails.
package apiservertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Env names the environment variable that holds the path of the
// test-apiserver program.
const Env = "IPVSKIT_TEST_APISERVER"

// timeout bounds each wait for the program: to start, stop or exit. On the
// host a start takes seconds; under the VM rig's emulation, beside other
// work, it has taken over three minutes.
const timeout = 8 * time.Minute

// Server is a running test-apiserver program. Its methods are for the test's
// own goroutine, one at a time.
type Server struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	lines    <-chan []byte // stdout, one line each; closed at its end
	stderr   *syncBuffer
	exited   chan struct{} // closed once cmd.Wait returned
	err      error         // cmd.Wait's error, once exited is closed
	exitOnce sync.Once

	kubeconfig string
	server     string
	config     *rest.Config
	client     kubernetes.Interface
}

// line is what the program prints on stdout, one JSON object a line.
type line struct {
	Ready      bool   `json:"ready"`
	Stopped    bool   `json:"stopped"`
	Kubeconfig string `json:"kubeconfig"`
	Server     string `json:"server"`
	Generation int    `json:"generation"`
}

// Start starts the program with a fresh directory from tb.TempDir and
// returns once the API server is ready. It skips tb when IPVSKIT_TEST_APISERVER
// is empty. tb.Cleanup stops the program and waits until it has exited.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return StartIn(tb, tb.TempDir())
}

// StartIn is Start in dir, which may hold an earlier server's etcd data
// (its "etcd" subdirectory, written by a server that has exited: see
// Exit): the objects stored then are there again, as after a restart.
// Benchmarks populate a large cluster once and start from a copy of it.
func StartIn(tb testing.TB, dir string) *Server {
	tb.Helper()
	bin := os.Getenv(Env)
	if bin == "" {
		tb.Skipf("%s is not set: no test API server (build one with bin=$(scripts/test-apiserver); export %s=$bin)", Env, Env)
	}
	s := &Server{stderr: new(syncBuffer), exited: make(chan struct{})}
	s.cmd = command(bin, "-dir", dir)
	s.cmd.Stderr = s.stderr
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		tb.Fatalf("test-apiserver: stdin pipe: %v", err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("test-apiserver: stdout pipe: %v", err)
	}
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("start test-apiserver %s: %v", bin, err)
	}
	s.stdin = stdin
	// Buffered: the program prints one line per command, and nothing may
	// block the reader before it reaches the end of stdout and Wait.
	lines := make(chan []byte, 16)
	s.lines = lines
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
		close(lines)
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	tb.Cleanup(func() { s.Exit(tb) })

	ready := s.await(tb, "start")
	if !ready.Ready {
		tb.Fatalf("test-apiserver: start: got %+v, want a ready line", ready)
	}
	s.kubeconfig, s.server = ready.Kubeconfig, ready.Server
	tb.Logf("test-apiserver: %s ready (kubeconfig %s)", s.server, s.kubeconfig)
	s.config, err = clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		tb.Fatalf("test-apiserver: load kubeconfig: %v", err)
	}
	// As StartTestServer's own client: tests should not wait on client-go's
	// default of 5 requests a second.
	s.config.QPS, s.config.Burst = 1000, 2000
	if s.client, err = kubernetes.NewForConfig(s.config); err != nil {
		tb.Fatalf("test-apiserver: client: %v", err)
	}
	return s
}

// command runs bin with args. kube-apiserver's test server writes a key
// file to /tmp, whatever TMPDIR says; where /tmp is read-only (the VM rig
// shares the host's root read-only) the program runs in a mount namespace of
// its own with a tmpfs on /tmp, which needs root and util-linux's unshare.
func command(bin string, args ...string) *exec.Cmd {
	if f, err := os.CreateTemp("/tmp", "apiservertest-*"); err == nil {
		f.Close()
		os.Remove(f.Name())
		return exec.Command(bin, args...)
	}
	// unshare --mount makes the new namespace's mounts private, and both it
	// and the shell exec: the process started is the program itself. The
	// program is opened before the tmpfs hides /tmp and run through its
	// descriptor, so that it may live under /tmp too (a cache there).
	script := `exec 3<"$0" && mount -t tmpfs -o mode=1777 tmp /tmp && exec /proc/self/fd/3 "$@"`
	return exec.Command("unshare", append([]string{"--mount", "--", "sh", "-c", script, bin}, args...)...)
}

// Kubeconfig returns the path of the server's kubeconfig.
func (s *Server) Kubeconfig() string { return s.kubeconfig }

// Config returns a copy of the client configuration read from the
// kubeconfig, with client-side rate limits raised for tests.
func (s *Server) Config() *rest.Config { return rest.CopyConfig(s.config) }

// Client returns a clientset for Config. It keeps working across Stop and
// Start, since the URL and credentials stay the same.
func (s *Server) Client() kubernetes.Interface { return s.client }

// Stop stops the API server, leaving etcd running, and returns once it is
// down: new connections are refused and open ones, watches included, end.
func (s *Server) Stop(tb testing.TB) {
	tb.Helper()
	s.send(tb, "stop")
	if l := s.await(tb, "stop"); !l.Stopped {
		tb.Fatalf("test-apiserver: stop: got %+v, want {\"stopped\":true}", l)
	}
}

// Start starts the API server again, on the same URL, and returns once it is
// ready. Objects stored before Stop are still there.
func (s *Server) Start(tb testing.TB) {
	tb.Helper()
	s.send(tb, "start")
	s.ready(tb, "start")
}

// Restart stops the API server and starts it again, like Stop then Start.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.send(tb, "restart")
	s.ready(tb, "restart")
}

func (s *Server) send(tb testing.TB, cmd string) {
	tb.Helper()
	if _, err := io.WriteString(s.stdin, cmd+"\n"); err != nil {
		tb.Fatalf("test-apiserver: send %q: %v", cmd, err)
	}
}

// ready waits for the ready line and checks that the URL has not moved.
func (s *Server) ready(tb testing.TB, what string) {
	tb.Helper()
	l := s.await(tb, what)
	if !l.Ready {
		tb.Fatalf("test-apiserver: %s: got %+v, want a ready line", what, l)
	}
	if l.Server != s.server || l.Kubeconfig != s.kubeconfig {
		tb.Fatalf("test-apiserver: %s: now at %s (kubeconfig %s), was at %s (kubeconfig %s)", what, l.Server, l.Kubeconfig, s.server, s.kubeconfig)
	}
}

// await reads the program's answer to what: its next line on stdout.
func (s *Server) await(tb testing.TB, what string) line {
	tb.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case b, ok := <-s.lines:
		if !ok {
			<-s.exited
			tb.Fatalf("test-apiserver: %s: exited without answering: %v", what, s.err)
		}
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			tb.Fatalf("test-apiserver: %s: bad line %q on stdout: %v", what, b, err)
		}
		return l
	case <-timer.C:
		_ = s.cmd.Process.Kill()
		tb.Fatalf("test-apiserver: %s: no answer within %v", what, timeout)
	}
	panic("unreachable")
}

// Exit asks the program to stop everything (the API server, then etcd,
// which leaves its data consistent on disk) and waits until it has exited;
// it shows its log if the test failed. tb.Cleanup calls it too; only the
// first call does anything.
func (s *Server) Exit(tb testing.TB) {
	tb.Helper()
	s.exitOnce.Do(func() { s.exit(tb) })
}

func (s *Server) exit(tb testing.TB) {
	tb.Helper()
	_, _ = io.WriteString(s.stdin, "exit\n")
	_ = s.stdin.Close() // the end of stdin means exit too
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-s.exited:
	case <-timer.C:
		_ = s.cmd.Process.Kill()
		<-s.exited
		tb.Errorf("test-apiserver: did not exit within %v; killed", timeout)
	}
	if s.err != nil {
		tb.Errorf("test-apiserver: exit: %v", s.err)
	}
	if tb.Failed() {
		tb.Logf("test-apiserver's log (stderr):\n%s", s.stderr)
	}
}

// syncBuffer collects the program's stderr, written by exec's copying
// goroutine and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
