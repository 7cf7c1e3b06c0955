package vm

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// frameType says what a frame carries.
type frameType uint8

const (
	frameStart    frameType = iota + 1 // host -> guest: a Job, as JSON
	frameKill                          // host -> guest: kill the job
	frameShutdown                      // host -> guest: power off
	frameReady                         // guest -> host: the agent is up; payload: uname
	frameStdout                        // guest -> host: job output
	frameStderr                        // guest -> host: job error output
	frameExit                          // guest -> host: an Exit, as JSON; the job is over
)

func (t frameType) String() string {
	names := [...]string{"invalid", "start", "kill", "shutdown", "ready", "stdout", "stderr", "exit"}
	if int(t) < len(names) {
		return names[t]
	}
	return fmt.Sprintf("frame(%d)", uint8(t))
}

// maxPayload bounds one frame, so a corrupt length cannot make a reader
// allocate without limit.
const maxPayload = 1 << 20

const headerLen = 9 // type (1), job id (4), payload length (4), big endian

type frame struct {
	typ     frameType
	job     uint32
	payload []byte
}

// Job is one program to run inside the guest.
type Job struct {
	Argv []string // program and arguments; Argv[0] is an absolute path or found on PATH
	Dir  string   // working directory ("" is /)
	Env  []string // the whole environment, as KEY=value
}

// Exit is how a job ended.
type Exit struct {
	Code  int    // exit code; -1 with Error set if it never started
	Error string // why it could not be started or waited for
}

// frameWriter writes whole frames; it is safe for concurrent use.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (fw *frameWriter) write(t frameType, job uint32, payload []byte) error {
	if len(payload) > maxPayload {
		return fmt.Errorf("vm: %v frame of %d bytes exceeds %d", t, len(payload), maxPayload)
	}
	buf := make([]byte, headerLen+len(payload))
	buf[0] = byte(t)
	binary.BigEndian.PutUint32(buf[1:5], job)
	binary.BigEndian.PutUint32(buf[5:9], uint32(len(payload)))
	copy(buf[headerLen:], payload)
	fw.mu.Lock()
	defer fw.mu.Unlock()
	_, err := fw.w.Write(buf)
	return err
}

// writeChunked sends p as as many frames of type t as needed.
func (fw *frameWriter) writeChunked(t frameType, job uint32, p []byte) error {
	for len(p) > 0 {
		n := min(len(p), 32<<10)
		if err := fw.write(t, job, p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

func readFrame(r *bufio.Reader) (frame, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	f := frame{typ: frameType(h[0]), job: binary.BigEndian.Uint32(h[1:5])}
	n := binary.BigEndian.Uint32(h[5:9])
	if f.typ == 0 || f.typ > frameExit {
		return frame{}, fmt.Errorf("vm: bad frame type %d", h[0])
	}
	if n > maxPayload {
		return frame{}, fmt.Errorf("vm: %v frame claims %d bytes, more than %d", f.typ, n, maxPayload)
	}
	f.payload = make([]byte, n)
	if _, err := io.ReadFull(r, f.payload); err != nil {
		return frame{}, fmt.Errorf("vm: short %v frame: %w", f.typ, err)
	}
	return f, nil
}
