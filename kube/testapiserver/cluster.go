package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/apiserver/pkg/storage/storagebackend"
)

// storagePrefix is where every API server generation keeps its objects in
// etcd; a fixed prefix is what lets objects survive a restart.
const storagePrefix = "/registry"

// cluster is an etcd that lives as long as the program and the API server
// generations that come and go on top of it, behind one front address.
type cluster struct {
	dir        string
	kubeconfig string
	pki        *pki
	etcd       *embed.Etcd
	storage    *storagebackend.Config
	door       door
	api        *apiServer // nil while stopped
	generation int
}

// newCluster prepares dir and starts etcd; the API server starts with start.
func newCluster(dir string) (*cluster, error) {
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", tmp, err)
	}
	// StartTestServer makes its certificate directory with os.MkdirTemp;
	// keep it under dir.
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		return nil, fmt.Errorf("set TMPDIR: %w", err)
	}
	p, err := newPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	e, clientURL, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, err
	}
	storage := storagebackend.NewDefaultConfig(storagePrefix, nil)
	storage.Transport.ServerList = []string{clientURL}
	return &cluster{
		dir:        dir,
		kubeconfig: filepath.Join(dir, "kubeconfig"),
		pki:        p,
		etcd:       e,
		storage:    storage,
	}, nil
}

// server is the URL clients use, the same for every generation.
func (c *cluster) server() string { return "https://" + c.door.addr }

// start starts the next API server generation and opens the front address
// to it; the first start also writes the kubeconfig. It does nothing while
// a generation runs.
func (c *cluster) start() error {
	if c.api != nil {
		return nil
	}
	api, err := startAPIServer(c.dir, c.pki, c.storage)
	if err != nil {
		return fmt.Errorf("start API server generation %d: %w", c.generation+1, err)
	}
	if err := c.door.open(api.addr); err != nil {
		return errors.Join(err, api.stop())
	}
	c.api = api
	c.generation++
	if c.generation == 1 {
		if err := writeKubeconfig(c.kubeconfig, c.server(), c.pki); err != nil {
			return err
		}
	}
	return nil
}

// stop closes the front address, ending open connections, and stops the
// running generation. It does nothing while stopped.
func (c *cluster) stop() error {
	if c.api == nil {
		return nil
	}
	c.door.close()
	err := c.api.stop()
	c.api = nil
	if err != nil {
		return fmt.Errorf("stop API server generation %d: %w", c.generation, err)
	}
	return nil
}

// close stops the API server and etcd.
func (c *cluster) close() error {
	err := c.stop()
	c.etcd.Close()
	return err
}
