package kubeproxybench

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	ipvsbench "github.com/ipvskit/ipvskit/bench/ipvs"
)

// StraceArgs are the strace arguments that record every netlink message a
// program and its children send (their bytes dumped), and its writes, to
// file. --seccomp-bpf stops the tracees only at those system calls, so the
// traced program runs at nearly its own speed.
func StraceArgs(file string) []string {
	return []string{"-f", "--seccomp-bpf", "-qq", "-e", "trace=sendmsg,sendto,sendmmsg,write",
		"-e", "write=all", "-e", "signal=none", "-o", file}
}

// syncMarker is the start of the oracle's report line as strace prints the
// write of it: the end of one sync.
const syncMarker = `write(1, "{\"sync\":`

// Netlink header flags (include/uapi/linux/netlink.h).
const (
	nlmFRequest = 0x1
	nlmFAck     = 0x4
	nlmFDump    = 0x300
)

// ParseSyncs reads strace output made with StraceArgs of the oracle and its
// children and returns what was sent over netlink in each sync: element k
// is everything sent after the (k)th report line and up to the (k+1)th (for
// the first sync, from the program's start). Sends that are not netlink
// (their line names neither AF_NETLINK nor an nlmsg header) are left out.
func ParseSyncs(b []byte) ([]ipvsbench.Sent, error) {
	var (
		out        = []ipvsbench.Sent{{}}
		buf        []byte
		collecting bool
		pending    = map[string]bool{} // pid -> an unfinished netlink send
	)
	flush := func() error {
		if !collecting {
			return nil
		}
		collecting = false
		s := &out[len(out)-1]
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
		buf = buf[:0]
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " | ") {
			if !collecting {
				continue
			}
			// " | 00000  1c 00 00 00 1a 00 01 03  ed 45 ...  ascii |"
			_, rest, ok := strings.Cut(line[3:], "  ")
			if !ok {
				continue
			}
			if len(rest) > 49 {
				rest = rest[:49]
			}
			raw, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(rest), " ", ""))
			if err != nil {
				return nil, fmt.Errorf("strace dump line %q: %w", line, err)
			}
			buf = append(buf, raw...)
			continue
		}
		if strings.HasPrefix(line, " * ") {
			continue // "* N bytes in buffer K" of a sendmsg: same send
		}
		if err := flush(); err != nil {
			return nil, err
		}
		pid, call := splitPID(line)
		switch {
		case strings.Contains(call, syncMarker):
			out = append(out, ipvsbench.Sent{})
		case strings.HasPrefix(call, "send"):
			if !strings.Contains(call, "AF_NETLINK") && !strings.Contains(call, "nlmsg_") {
				continue
			}
			out[len(out)-1].Syscalls++
			if strings.Contains(call, "<unfinished") {
				pending[pid] = true
			} else {
				collecting = true
			}
		case strings.HasPrefix(call, "<... send") && pending[pid]:
			delete(pending, pid)
			collecting = true
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, sc.Err()
}

// splitPID splits "1234  call(...)" (strace -f) into the pid and the call.
func splitPID(line string) (pid, call string) {
	i := 0
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if i == 0 {
		return "", line
	}
	return line[:i], strings.TrimLeft(line[i:], " ")
}
