// Command test-apiserver runs a real Kubernetes API server for tests: an
// embedded etcd and a kube-apiserver (k8s.io/kubernetes'
// cmd/kube-apiserver/app/testing.StartTestServer) in one process, both bound
// to 127.0.0.1 only.
//
//	test-apiserver -dir DIR [-v LEVEL]
//
// etcd keeps its data under DIR/etcd; certificates live under DIR/pki. When
// the API server is ready, the program writes DIR/kubeconfig (server URL, CA
// and a client certificate in group system:masters) and prints one JSON line
// on stdout:
//
//	{"ready":true,"kubeconfig":"DIR/kubeconfig","server":"https://127.0.0.1:PORT","generation":1}
//
// It then reads commands from stdin, one a line:
//
//	stop     stop the API server (etcd keeps running); prints {"stopped":true}
//	start    start it again; prints the ready line with the next generation
//	restart  stop, then start
//	exit     stop everything and exit 0 (so does the end of stdin)
//
// "stop" while stopped and "start" while running only repeat their line.
//
// Restarts keep the URL and the kubeconfig: StartTestServer always listens
// on a fresh port, so clients connect to a fixed front address that passes
// each TCP connection through to the current API server (TLS ends at the API
// server). The serving certificate and client CA are generated once, under
// DIR/pki, and handed to every generation, so the CA and credentials in
// DIR/kubeconfig stay valid. While stopped, the front address is closed:
// connections are refused, and connections that were open (watches) end.
//
// Logs (klog, etcd) go to stderr; -v sets klog's verbosity (default 0). Errors
// go to stderr and the program exits non-zero.
//
// scripts/test-apiserver builds this program once per machine and prints its
// path; the Go package kube/internal/apiservertest drives it from tests.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/klog/v2"
)

func main() {
	fs := flag.NewFlagSet("test-apiserver", flag.ExitOnError)
	dir := fs.String("dir", "", "directory for etcd data, certificates and the kubeconfig (required)")
	verbosity := fs.Int("v", 0, "klog verbosity")
	_ = fs.Parse(os.Args[1:])
	if *dir == "" || fs.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: test-apiserver -dir DIR [-v LEVEL]")
		os.Exit(2)
	}
	if err := setKlog(*verbosity); err != nil {
		fmt.Fprintf(os.Stderr, "test-apiserver: %v\n", err)
		os.Exit(1)
	}
	if err := run(*dir, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "test-apiserver: %v\n", err)
		os.Exit(1)
	}
}

// setKlog sends klog to stderr at the given verbosity. The flags are bound to
// klog's global state, which ktesting's loggers also read.
func setKlog(verbosity int) error {
	var fs flag.FlagSet
	klog.InitFlags(&fs)
	for name, value := range map[string]string{"v": strconv.Itoa(verbosity), "logtostderr": "true"} {
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("set klog flag -%s=%s: %w", name, value, err)
		}
	}
	return nil
}

// readyLine and stoppedLine are the JSON lines printed on stdout.
type readyLine struct {
	Ready      bool   `json:"ready"`
	Kubeconfig string `json:"kubeconfig"`
	Server     string `json:"server"`
	Generation int    `json:"generation"`
}

type stoppedLine struct {
	Stopped bool `json:"stopped"`
}

// run starts everything in dir, then serves the commands read from in until
// "exit" or the end of in.
func run(dir string, in io.Reader, out io.Writer) (err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolve -dir: %w", err)
	}
	c, err := newCluster(dir)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := c.close(); err == nil {
			err = cerr
		}
	}()

	enc := json.NewEncoder(out)
	ready := func() error {
		if err := c.start(); err != nil {
			return err
		}
		return enc.Encode(readyLine{Ready: true, Kubeconfig: c.kubeconfig, Server: c.server(), Generation: c.generation})
	}
	stopped := func() error {
		if err := c.stop(); err != nil {
			return err
		}
		return enc.Encode(stoppedLine{Stopped: true})
	}

	if err := ready(); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch cmd := sc.Text(); cmd {
		case "start":
			err = ready()
		case "stop":
			err = stopped()
		case "restart":
			if err = c.stop(); err == nil {
				err = ready()
			}
		case "exit":
			return nil
		case "":
		default:
			err = fmt.Errorf("unknown command %q on stdin (want start, stop, restart or exit)", cmd)
		}
		if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	return nil
}
