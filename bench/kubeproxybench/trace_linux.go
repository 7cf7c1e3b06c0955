package kubeproxybench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Attach starts strace on the running process pid and everything it starts
// from now on, recording into file what StraceArgs records (without
// --seccomp-bpf, which only works for a process strace starts). It returns
// once every thread of pid is traced; stop detaches and waits for strace to
// write out the file.
func Attach(pid int, file string) (stop func() error, err error) {
	var args []string
	for _, a := range StraceArgs(file) {
		if a != "--seccomp-bpf" {
			args = append(args, a)
		}
	}
	cmd := exec.Command("strace", append(args, "-p", strconv.Itoa(pid))...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting strace: %w", err)
	}
	stop = func() error {
		// SIGINT makes strace detach from every tracee and flush.
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		all, err := traced(pid)
		if err != nil {
			stop()
			return nil, err
		}
		if all {
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("strace did not attach to %d in 10s: %s", pid, strings.TrimSpace(stderr.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// traced says whether every thread of pid has a tracer.
func traced(pid int) (bool, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil {
		return false, err
	}
	if len(tasks) == 0 {
		return false, fmt.Errorf("process %d is gone", pid)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "TracerPid:"); ok && strings.TrimSpace(v) == "0" {
				return false, nil
			}
		}
	}
	return true, nil
}
