package ipvsbench

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Netlink header flags, from include/uapi/linux/netlink.h.
const (
	nlmFRequest = 0x1
	nlmFAck     = 0x4
	nlmFDump    = 0x300 // NLM_F_ROOT|NLM_F_MATCH
)

// Sent is what one traced call sent to the kernel over netlink, counted by
// strace (an independent oracle: it reads the bytes of every sendmsg/sendto
// the process makes, whoever made them).
type Sent struct {
	Syscalls int // sendmsg/sendto/sendmmsg calls
	Requests int // netlink messages with NLM_F_REQUEST
	Dumps    int // of those, requests with NLM_F_DUMP
	Acked    int // of those, requests with NLM_F_ACK
}

func (s Sent) String() string {
	return fmt.Sprintf("%d request(s) in %d send(s), %d dump(s), %d acked", s.Requests, s.Syscalls, s.Dumps, s.Acked)
}

// TraceSends runs f while strace is attached to this process and returns what
// f sent over netlink. It needs the strace program and the right to ptrace
// this process (root).
func TraceSends(f func() error) (Sent, error) {
	out, err := os.CreateTemp("", "ipvsbench-strace-*.txt")
	if err != nil {
		return Sent{}, err
	}
	name := out.Name()
	out.Close()
	defer os.Remove(name)

	cmd := exec.Command("strace", "-qq", "-f", "-e", "trace=sendmsg,sendto,sendmmsg",
		"-e", "write=all", "-e", "signal=none", "-o", name, "-p", strconv.Itoa(os.Getpid()))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return Sent{}, fmt.Errorf("starting strace: %w", err)
	}
	if err := waitTraced(5 * time.Second); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return Sent{}, fmt.Errorf("%w (strace: %s)", err, bytes.TrimSpace(stderr.Bytes()))
	}
	ferr := f()
	// SIGINT makes strace detach from every thread and flush its output.
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if ferr != nil {
		return Sent{}, ferr
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return Sent{}, err
	}
	return parseStrace(b)
}

// waitTraced waits until strace has attached to every thread of this process.
func waitTraced(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		all, err := allThreadsTraced()
		if err != nil {
			return err
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("strace did not attach within %v", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func allThreadsTraced() (bool, error) {
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		return false, err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // thread exited
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "TracerPid:"); ok && strings.TrimSpace(v) == "0" {
				return false, nil
			}
		}
	}
	return len(tasks) > 0, nil
}

// parseStrace reads strace output made with -e write=all: each traced send is
// a line of its own followed by " | " hex dump lines of the bytes it sent.
func parseStrace(b []byte) (Sent, error) {
	var (
		s   Sent
		buf []byte
	)
	flush := func() error {
		if buf == nil {
			return nil
		}
		defer func() { buf = nil }()
		for len(buf) >= 16 {
			n := int(binary.LittleEndian.Uint32(buf[0:4]))
			flags := binary.LittleEndian.Uint16(buf[6:8])
			if n < 16 || n > len(buf) {
				return fmt.Errorf("strace dump: bad netlink length %d of %d bytes", n, len(buf))
			}
			if flags&nlmFRequest != 0 {
				s.Requests++
				if flags&nlmFDump == nlmFDump {
					s.Dumps++
				}
				if flags&nlmFAck != 0 {
					s.Acked++
				}
			}
			buf = buf[min((n+3)&^3, len(buf)):]
		}
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, " | "):
			// " | 00000  1c 00 00 00 1a 00 01 03  ed 45 ...  ascii |"
			off, rest, ok := strings.Cut(line[3:], "  ")
			if !ok || off == "" {
				continue
			}
			hexPart := rest
			if len(hexPart) > 49 {
				hexPart = hexPart[:49]
			}
			raw, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(hexPart), " ", ""))
			if err != nil {
				return s, fmt.Errorf("strace dump line %q: %w", line, err)
			}
			buf = append(buf, raw...)
		case strings.HasPrefix(line, " * "):
			// "* N bytes in buffer K": part of the same send.
		default:
			if err := flush(); err != nil {
				return s, err
			}
			if strings.Contains(line, "send") && !strings.Contains(line, "resumed>") {
				s.Syscalls++
				buf = []byte{}
			}
		}
	}
	if err := flush(); err != nil {
		return s, err
	}
	return s, sc.Err()
}
