package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
)

// EnvSocket names the environment variable through which a command run by
// `vmexec session` finds the session's socket: vmexec invocations that see it
// send their job to the running guest instead of booting one of their own.
const EnvSocket = "IPVSKIT_VM_SOCKET"

// Serve accepts clients on ln, each sending one job (a start frame) to run on
// s; it returns when ln is closed. A client that disconnects has its job
// killed. The protocol is the guest's own: start, then output and exit frames.
func Serve(ln net.Listener, s *Session) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go serveOne(c, s)
	}
}

func serveOne(c net.Conn, s *Session) {
	defer c.Close()
	r := bufio.NewReader(c)
	f, err := readFrame(r)
	fw := &frameWriter{w: c}
	fail := func(e Exit) {
		b, _ := json.Marshal(e)
		fw.write(frameExit, 1, b)
	}
	if err != nil || f.typ != frameStart {
		fail(Exit{Code: -1, Error: fmt.Sprintf("want a start frame, got %v (%v)", f.typ, err)})
		return
	}
	var job Job
	if err := json.Unmarshal(f.payload, &job); err != nil {
		fail(Exit{Code: -1, Error: "bad job: " + err.Error()})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// The client sends nothing more; a read that ends means it left.
		io.Copy(io.Discard, r)
		cancel()
	}()
	code, err := s.Run(ctx, job, streamTo{fw, frameStdout}, streamTo{fw, frameStderr})
	e := Exit{Code: code}
	if err != nil {
		e.Error = err.Error()
		if errors.Is(err, ErrVMGone) {
			e.Error = (&RigError{Attempts: 1, Reason: "the guest went away while the job ran", ConsoleTail: s.ConsoleTail()}).Error()
		}
	}
	fail(e)
}

type streamTo struct {
	fw  *frameWriter
	typ frameType
}

func (s streamTo) Write(p []byte) (int, error) {
	if err := s.fw.writeChunked(s.typ, 1, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// RunRemote sends job to the session listening on socket and copies its
// output, returning its exit code.
func RunRemote(ctx context.Context, socket string, job Job, stdout, stderr io.Writer) (int, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return -1, fmt.Errorf("vm: reaching the session at %s: %w", socket, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	body, err := json.Marshal(job)
	if err != nil {
		return -1, err
	}
	fw := &frameWriter{w: c}
	if err := fw.write(frameStart, 1, body); err != nil {
		return -1, err
	}
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		f, err := readFrame(r)
		if err != nil {
			if ctx.Err() != nil {
				return -1, ctx.Err()
			}
			return -1, fmt.Errorf("%w: session connection: %v", ErrVMGone, err)
		}
		switch f.typ {
		case frameStdout:
			stdout.Write(f.payload)
		case frameStderr:
			stderr.Write(f.payload)
		case frameExit:
			var e Exit
			if err := json.Unmarshal(f.payload, &e); err != nil {
				return -1, fmt.Errorf("vm: bad exit frame: %w", err)
			}
			return exitResult(e, true)
		}
	}
}
