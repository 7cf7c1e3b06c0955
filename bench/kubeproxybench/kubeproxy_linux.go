package kubeproxybench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Report is the line the oracle writes after each sync.
type Report struct {
	Sync     int     `json:"sync"`
	Seconds  float64 `json:"seconds"`
	Services int     `json:"services"`
	Slices   int     `json:"slices"`
	Calls    Calls   `json:"calls"`
}

// Calls are what a sync asked of kube-proxy's utilities: IPVS netlink
// requests that change (IPVS) or read (IPVSRead, a dump or a get each), and
// runs of the ipset and iptables programs.
type Calls struct {
	IPVS     int64 `json:"ipvs"`
	IPVSRead int64 `json:"ipvsRead"`
	IPSet    int64 `json:"ipset"`
	IPTables int64 `json:"iptables"`
}

func (c Calls) String() string {
	return fmt.Sprintf("IPVS %d writes + %d reads; %d ipset, %d iptables runs", c.IPVS, c.IPVSRead, c.IPSet, c.IPTables)
}

// ErrTimeout is returned by Wait when a sync did not finish in time.
var ErrTimeout = errors.New("kube-proxy did not finish the sync in time")

// KubeProxy is the oracle (kube-proxy's real IPVS proxier) running in a node
// namespace, fed through its state file.
type KubeProxy struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	file  string
	syncs int
	log   *tail
	done  chan struct{} // closed when standard output ended
}

// StartKubeProxy writes m to dir/objects.json and starts the oracle on it in
// node; its first sync starts at once (Wait for it). With trace set, the
// oracle runs under strace (StraceArgs), recording into that file.
func StartKubeProxy(oracle string, node *Node, m *Model, dir, trace string) (*KubeProxy, error) {
	k := &KubeProxy{file: filepath.Join(dir, "objects.json"), lines: make(chan string, 16),
		log: &tail{max: 16 << 10}, done: make(chan struct{})}
	if err := m.Replace(k.file); err != nil {
		return nil, err
	}
	args := []string{"-state", k.file, "-node", NodeName, "-node-ip", NodeIP.Addr().String(),
		"-nodeport-addresses", NodeIP.Masked().String()}
	if trace != "" {
		k.cmd = exec.Command("strace", append(append(StraceArgs(trace), "--", oracle), args...)...)
	} else {
		k.cmd = exec.Command(oracle, args...)
	}
	// Its own process group, so that a sync that runs over the time limit
	// is ended with every ipset and iptables it started.
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	k.cmd.Stderr = k.log
	out, err := k.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if k.stdin, err = k.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := node.Start(k.cmd); err != nil {
		return nil, fmt.Errorf("starting kube-proxy's oracle: %w", err)
	}
	go func() {
		defer close(k.done)
		defer close(k.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			k.lines <- sc.Text()
		}
	}()
	return k, nil
}

// Wait reads the report of the next sync.
func (k *KubeProxy) Wait(timeout time.Duration) (Report, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case l, ok := <-k.lines:
		if !ok {
			return Report{}, fmt.Errorf("kube-proxy's oracle ended before sync %d; its log:\n%s", k.syncs+1, k.log)
		}
		var r Report
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Sync != k.syncs+1 {
			return Report{}, fmt.Errorf("kube-proxy's oracle wrote %q, want sync %d", l, k.syncs+1)
		}
		k.syncs++
		return r, nil
	case <-t.C:
		return Report{}, fmt.Errorf("sync %d: %w (%v)", k.syncs+1, ErrTimeout, timeout)
	}
}

// Change replaces the state file with m: one sync follows (Wait for it).
func (k *KubeProxy) Change(m *Model) error { return m.Replace(k.file) }

// Resync asks for a sync without a change (kube-proxy's periodic one).
func (k *KubeProxy) Resync() error {
	_, err := io.WriteString(k.stdin, "sync\n")
	return err
}

// Stop ends the oracle: "exit" and the end of its input, or, if it does not
// end within grace (it is inside a sync that ran over), SIGKILL to its
// process group.
func (k *KubeProxy) Stop(grace time.Duration) error {
	io.WriteString(k.stdin, "exit\n")
	k.stdin.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	killed := false
	for {
		select {
		case _, ok := <-k.lines:
			if ok {
				continue
			}
		case <-t.C:
			syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
			killed = true
			<-k.done
		}
		break
	}
	err := k.cmd.Wait()
	if killed {
		return nil
	}
	return err
}

// Kill ends the oracle and everything it started at once.
func (k *KubeProxy) Kill() {
	k.stdin.Close()
	syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
	<-k.done
	k.cmd.Wait()
}

// Log is the tail of the oracle's standard error.
func (k *KubeProxy) Log() string { return k.log.String() }

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// Pid is the oracle's process id (strace's, when it runs under strace).
func (k *KubeProxy) Pid() int { return k.cmd.Process.Pid }
