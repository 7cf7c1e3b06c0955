package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/apiserver/pkg/storage/storagebackend"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/test/utils/ktesting"
)

// apiServer is one generation of kube-apiserver, started by StartTestServer.
type apiServer struct {
	addr string // 127.0.0.1:port it listens on
	tb   *tb
	ts   kubeapiservertesting.TestServer
}

// startAPIServer starts kube-apiserver on storage, with p's serving
// certificate and client CA, and returns once it is healthy and has created
// the default namespace.
func startAPIServer(dir string, p *pki, storage *storagebackend.Config) (*apiServer, error) {
	// StartTestServer locates its fixtures from its source file's path,
	// which -trimpath makes relative; these variables (Bazel's) make it
	// absolute. The fixtures are not read: the certificates in p are used.
	for name, value := range map[string]string{"TEST_SRCDIR": dir, "TEST_WORKSPACE": "fixtures"} {
		if err := os.Setenv(name, value); err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
	}
	flags := []string{
		"--bind-address=127.0.0.1",
		"--cert-dir=" + p.certDir, // apiserver.crt and apiserver.key
		"--client-ca-file=" + p.caFile,
		// No controllers run here: nothing would create service accounts.
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
		// Cluster IPs from the benchmarking range (RFC 2544) the tests use,
		// never addresses a real network might have.
		"--service-cluster-ip-range=198.18.128.0/17",
		// API Priority and Fairness's post-start hook gives up after a
		// fixed wait, which an emulated CPU (the VM rig under load)
		// overran; tests send too few requests to need it.
		"--enable-priority-and-fairness=false",
		// As kubeadm's clusters: node agents (kube/deploy's manifests, a
		// kube-proxy) run privileged.
		"--allow-privileged=true",
	}
	opts := kubeapiservertesting.NewDefaultTestServerOptions()
	// The invariant checks scrape metrics at tear-down; that is for
	// Kubernetes' own tests.
	opts.DisableInvariantChecks = true

	t := newTB(filepath.Join(dir, "tmp"))
	ts, err := kubeapiservertesting.StartTestServer(t, opts, flags, storage)
	if err != nil {
		return nil, errors.Join(err, t.runCleanups())
	}
	if err := t.err(); err != nil {
		ts.TearDownFn()
		return nil, errors.Join(err, t.runCleanups())
	}
	port := ts.ServerOpts.SecureServing.BindPort
	return &apiServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), tb: t, ts: ts}, nil
}

// stop shuts kube-apiserver down and waits until it has.
func (a *apiServer) stop() error {
	a.ts.TearDownFn()
	return errors.Join(a.tb.runCleanups(), a.tb.err())
}

var _ ktesting.TB = (*tb)(nil)
