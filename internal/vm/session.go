package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Config says how to boot the guest. Kernel, Initramfs and AgentPath are
// required; every other zero field means its default.
type Config struct {
	Kernel    Kernel
	Initramfs string
	AgentPath string // the vmexec binary, run in the guest as `AgentPath guest`

	QEMU        string        // default qemu-system-x86_64
	MemoryMB    int           // default 2048
	CPUs        int           // default 2
	KVM         bool          // set by Boot from the machine when KVMAuto is true
	KVMAuto     bool          // decide KVM from /dev/kvm and /proc/cpuinfo
	BootTimeout time.Duration // from start to the agent's ready frame; default 120 s
	Console     io.Writer     // if set, gets the serial console as it comes

	// Without names modules of Modules the guest leaves out (it loads the
	// rest), to test how a program copes with a kernel that lacks them. No
	// module the guest loads may need one of them: Boot fails otherwise.
	// The guest learns the list from its kernel command line (LeftOut).
	Without []string

	withoutArg string // Without as the init script matches it
}

func (c *Config) withDefaults() *Config {
	cc := *c
	if cc.QEMU == "" {
		cc.QEMU = "qemu-system-x86_64"
	}
	if cc.MemoryMB == 0 {
		cc.MemoryMB = 2048
	}
	if cc.CPUs == 0 {
		cc.CPUs = 2
	}
	if cc.BootTimeout == 0 {
		cc.BootTimeout = 120 * time.Second
	}
	if cc.KVMAuto {
		cc.KVM = detectKVM()
	}
	return &cc
}

// RigError says the rig itself failed (the VM did not boot, or died), as
// opposed to a test failing inside it.
type RigError struct {
	Attempts    int
	Reason      string
	ConsoleTail string
}

func (e *RigError) Error() string {
	return fmt.Sprintf("vm rig failure after %d boot attempt(s): %s\n--- console tail ---\n%s--- end of console ---",
		e.Attempts, e.Reason, e.ConsoleTail)
}

// ErrVMGone is returned by Run when the guest went away while the job ran.
var ErrVMGone = errors.New("vm: the guest went away")

// Session is a booted guest with its agent ready to run jobs.
type Session struct {
	cfg     *Config
	qemu    *exec.Cmd
	exited  chan struct{} // closed when QEMU has exited
	conn    net.Conn
	fw      *frameWriter
	console *tail
	Uname   string // the guest's uname, from the agent's ready frame

	mu     sync.Mutex
	nextID uint32
	jobs   map[uint32]*jobState
	gone   bool
}

type jobState struct {
	stdout, stderr io.Writer
	done           chan Exit
}

// Boot starts the guest and waits for its agent. A boot that does not reach
// the agent within the timeout (or whose QEMU exits) is killed and retried
// once; then Boot returns a *RigError with the console's last lines.
func Boot(ctx context.Context, cfg *Config) (*Session, error) {
	c := cfg.withDefaults()
	if len(c.Without) > 0 {
		files, err := c.Kernel.leaveOut(c.Without)
		if err != nil {
			return nil, fmt.Errorf("vm: %w", err)
		}
		c.withoutArg = strings.Join(files, ",")
	}
	var reasons []string
	var last *tail
	for attempt := 1; attempt <= 2; attempt++ {
		s, err := boot(ctx, c)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var be *bootError
		if !errors.As(err, &be) {
			return nil, err
		}
		reasons = append(reasons, fmt.Sprintf("attempt %d: %s", attempt, be.reason))
		last = be.console
	}
	return nil, &RigError{Attempts: 2, Reason: strings.Join(reasons, "; "), ConsoleTail: last.String()}
}

type bootError struct {
	reason  string
	console *tail
}

func (e *bootError) Error() string { return e.reason }

func boot(ctx context.Context, c *Config) (*Session, error) {
	dir, err := os.MkdirTemp("", "ipvskit-vm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) // the socket is only needed until QEMU has connected
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, err
	}
	defer ln.Close()

	console := newTail(64)
	var out io.Writer = console
	if c.Console != nil {
		out = io.MultiWriter(console, c.Console)
	}
	cmd := exec.Command(c.QEMU, qemuArgs(c, sock)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("vm: starting %s: %w", c.QEMU, err)
	}
	s := &Session{cfg: c, qemu: cmd, exited: make(chan struct{}), console: console, fw: nil, jobs: map[uint32]*jobState{}}
	go func() { cmd.Wait(); close(s.exited) }()
	fail := func(reason string) (*Session, error) {
		s.kill()
		return nil, &bootError{reason: reason, console: console}
	}

	deadline := time.Now().Add(c.BootTimeout)
	ln.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { ln.SetDeadline(time.Now()) })
	defer stop()
	go func() {
		select {
		case <-s.exited:
			ln.SetDeadline(time.Now()) // QEMU died: stop waiting for it
		case <-time.After(time.Until(deadline)):
		}
	}()
	conn, err := ln.Accept()
	if err != nil {
		return fail(s.waitReason("connect to the agent port", c.BootTimeout))
	}
	conn.SetReadDeadline(deadline)
	stopRead := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	defer stopRead()
	go func() {
		select {
		case <-s.exited:
			conn.SetReadDeadline(time.Now())
		case <-time.After(time.Until(deadline)):
		}
	}()
	r := bufio.NewReaderSize(conn, 64<<10)
	f, err := readFrame(r)
	if err != nil || f.typ != frameReady {
		conn.Close()
		if err == nil {
			err = fmt.Errorf("first frame was %v", f.typ)
		}
		return fail(s.waitReason("hear from the agent ("+err.Error()+")", c.BootTimeout))
	}
	conn.SetReadDeadline(time.Time{})
	s.conn, s.fw, s.Uname = conn, &frameWriter{w: conn}, string(f.payload)
	go s.readLoop(r)
	return s, nil
}

func (s *Session) waitReason(what string, bound time.Duration) string {
	select {
	case <-s.exited:
		return fmt.Sprintf("QEMU exited (%v) before the guest could %s", s.qemu.ProcessState, what)
	default:
		return fmt.Sprintf("the guest did not %s within %v (boot hang?)", what, bound)
	}
}

func (s *Session) readLoop(r *bufio.Reader) {
	for {
		f, err := readFrame(r)
		if err != nil {
			s.abandon()
			return
		}
		s.mu.Lock()
		j := s.jobs[f.job]
		if f.typ == frameExit {
			delete(s.jobs, f.job)
		}
		s.mu.Unlock()
		if j == nil {
			continue
		}
		switch f.typ {
		case frameStdout:
			j.stdout.Write(f.payload)
		case frameStderr:
			j.stderr.Write(f.payload)
		case frameExit:
			var e Exit
			if err := json.Unmarshal(f.payload, &e); err != nil {
				e = Exit{Code: -1, Error: "bad exit frame: " + err.Error()}
			}
			j.done <- e
		}
	}
}

// abandon ends every running job with ErrVMGone.
func (s *Session) abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
	for id, j := range s.jobs {
		close(j.done)
		delete(s.jobs, id)
	}
}

// Run runs job in the guest, copying its output to stdout and stderr, and
// returns its exit code. When ctx ends first the job is killed in the guest.
// An error means the job's fate is unknown (the guest went away: ErrVMGone).
func (s *Session) Run(ctx context.Context, job Job, stdout, stderr io.Writer) (int, error) {
	body, err := json.Marshal(job)
	if err != nil {
		return -1, err
	}
	j := &jobState{stdout: stdout, stderr: stderr, done: make(chan Exit, 1)}
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return -1, ErrVMGone
	}
	s.nextID++
	id := s.nextID
	s.jobs[id] = j
	s.mu.Unlock()
	if err := s.fw.write(frameStart, id, body); err != nil {
		return -1, fmt.Errorf("%w: %v", ErrVMGone, err)
	}
	select {
	case e, ok := <-j.done:
		return exitResult(e, ok)
	case <-ctx.Done():
		s.fw.write(frameKill, id, nil)
		e, ok := <-j.done // the agent answers a kill with the job's exit
		if _, err := exitResult(e, ok); err != nil {
			return -1, err
		}
		return -1, ctx.Err()
	}
}

func exitResult(e Exit, ok bool) (int, error) {
	if !ok {
		return -1, ErrVMGone
	}
	if e.Error != "" {
		return e.Code, errors.New("vm: " + e.Error)
	}
	return e.Code, nil
}

// ConsoleTail returns the last lines the guest printed on its console.
func (s *Session) ConsoleTail() string { return s.console.String() }

// Close powers the guest off, killing QEMU if it has not exited within 20 s.
func (s *Session) Close() error {
	if s.fw != nil {
		s.fw.write(frameShutdown, 0, nil)
	}
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.kill()
	}
	if s.conn != nil {
		s.conn.Close()
	}
	return nil
}

func (s *Session) kill() {
	s.qemu.Process.Kill()
	<-s.exited
}

// tail keeps the last n lines written to it.
type tail struct {
	mu    sync.Mutex
	n     int
	lines []string
	part  strings.Builder
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range p {
		if b == '\n' {
			t.lines = append(t.lines, strings.TrimRight(t.part.String(), "\r"))
			t.part.Reset()
			if len(t.lines) > t.n {
				t.lines = t.lines[len(t.lines)-t.n:]
			}
			continue
		}
		t.part.WriteByte(b)
	}
	return len(p), nil
}

func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for _, l := range t.lines {
		b.WriteString(l + "\n")
	}
	if t.part.Len() > 0 {
		b.WriteString(t.part.String() + "\n")
	}
	return b.String()
}

// KVM reports whether the guest runs under KVM (else pure emulation).
func (s *Session) KVM() bool { return s.cfg.KVM }
