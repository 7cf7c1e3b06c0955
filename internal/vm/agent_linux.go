package vm

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// guestTmp is the guest's writable TMPDIR (a tmpfs the init script mounts);
// the host's root, including its /tmp, is read-only in the guest.
const guestTmp = "/run/ipvskit-tmp"

// Agent is the guest side: it runs inside the VM as root (started by the init
// script), announces itself on the agent port, runs the jobs the host sends,
// and powers the guest off when told to or when the host goes away.
func Agent() error {
	port, err := findPort(AgentPort)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(port, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("vm agent: %w", err)
	}
	defer f.Close()
	return serveJobs(f)
}

// serveJobs is the agent's loop over an open port: it announces the agent,
// then runs jobs until told to shut down or until the host goes away.
func serveJobs(f io.ReadWriter) error {
	a := &agent{fw: &frameWriter{w: f}, procs: map[uint32]*os.Process{}}
	var u unix.Utsname
	unix.Uname(&u)
	uname := unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	if up, err := os.ReadFile("/proc/uptime"); err == nil {
		uname += ", agent ready at " + strings.Fields(string(up))[0] + "s guest uptime"
	}
	if err := a.fw.write(frameReady, 0, []byte(uname)); err != nil {
		return fmt.Errorf("vm agent: announcing: %w", err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		fr, err := readFrame(r)
		if err != nil {
			break // the host went away
		}
		switch fr.typ {
		case frameStart:
			var j Job
			if err := json.Unmarshal(fr.payload, &j); err != nil {
				a.exit(fr.job, Exit{Code: -1, Error: "bad job: " + err.Error()})
				continue
			}
			a.wg.Add(1)
			go a.run(fr.job, j)
		case frameKill:
			a.mu.Lock()
			if p := a.procs[fr.job]; p != nil {
				syscall.Kill(-p.Pid, syscall.SIGKILL) // the job's whole process group
			}
			a.mu.Unlock()
		case frameShutdown:
			a.killAll()
			a.wg.Wait()
			return nil
		}
	}
	a.killAll()
	a.wg.Wait()
	return nil
}

// PowerOff syncs and powers the guest off (QEMU then exits).
func PowerOff() {
	unix.Sync()
	unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
}

type agent struct {
	fw    *frameWriter
	wg    sync.WaitGroup
	mu    sync.Mutex
	procs map[uint32]*os.Process
}

func (a *agent) exit(id uint32, e Exit) {
	b, _ := json.Marshal(e)
	a.fw.write(frameExit, id, b)
}

func (a *agent) killAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.procs {
		syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}

// streamWriter turns a job's output into frames.
type streamWriter struct {
	a   *agent
	typ frameType
	id  uint32
}

func (w streamWriter) Write(p []byte) (int, error) {
	if err := w.a.fw.writeChunked(w.typ, w.id, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (a *agent) run(id uint32, j Job) {
	defer a.wg.Done()
	if len(j.Argv) == 0 {
		a.exit(id, Exit{Code: -1, Error: "empty argv"})
		return
	}
	cmd := exec.Command(j.Argv[0], j.Argv[1:]...)
	cmd.Dir = j.Dir
	cmd.Env = guestEnv(j.Env)
	cmd.Stdout = streamWriter{a, frameStdout, id}
	cmd.Stderr = streamWriter{a, frameStderr, id}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		a.exit(id, Exit{Code: -1, Error: err.Error()})
		return
	}
	a.mu.Lock()
	a.procs[id] = cmd.Process
	a.mu.Unlock()
	err := cmd.Wait()
	a.mu.Lock()
	delete(a.procs, id)
	a.mu.Unlock()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		a.exit(id, Exit{Code: code, Error: err.Error()})
		return
	}
	a.exit(id, Exit{Code: code})
}

// guestEnv is the job's environment with the rig's marker, a writable
// TMPDIR, and the sbin directories on PATH (the reference tools live there).
func guestEnv(env []string) []string {
	out := make([]string, 0, len(env)+3)
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "TMPDIR="), strings.HasPrefix(kv, "IPVSKIT_IN_VM="):
			continue
		case strings.HasPrefix(kv, "PATH="):
			path = strings.TrimPrefix(kv, "PATH=") + ":/usr/sbin:/sbin"
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PATH="+path, "TMPDIR="+guestTmp, "IPVSKIT_IN_VM=1")
}

// findPort finds the character device of the named virtio-serial port
// (no udev in the guest, so no /dev/virtio-ports links).
func findPort(name string) (string, error) {
	ports, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
	for _, p := range ports {
		b, err := os.ReadFile(p)
		if err == nil && strings.TrimSpace(string(b)) == name {
			return "/dev/" + filepath.Base(filepath.Dir(p)), nil
		}
	}
	return "", fmt.Errorf("vm agent: no virtio-serial port named %q (of %d)", name, len(ports))
}
