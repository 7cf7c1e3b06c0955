package main

import (
	"fmt"
	"net"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// etcdTimeout bounds how long etcd may take to become ready.
const etcdTimeout = time.Minute

// startEtcd starts a single-member etcd with its data in dir and its client
// and peer URLs on free 127.0.0.1 ports, and returns its client URL once it
// serves.
func startEtcd(dir string) (*embed.Etcd, string, error) {
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return nil, "", err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return nil, "", err
	}

	cfg := embed.NewConfig()
	cfg.Name = "test-apiserver"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.Logger = "zap"
	// etcd logs errors with stack traces on a normal Close; the API server
	// reports failing etcd requests itself.
	cfg.LogLevel = "fatal"
	cfg.LogOutputs = []string{"stderr"}
	// Test data need not survive a crash of the machine.
	cfg.UnsafeNoFsync = true

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd in %s: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, clientURL.String(), nil
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("start etcd in %s: %w", dir, err)
	case <-time.After(etcdTimeout):
		e.Close()
		return nil, "", fmt.Errorf("start etcd in %s: not ready after %v", dir, etcdTimeout)
	}
}

// freeLoopbackURL returns an http URL on a 127.0.0.1 port that was free a
// moment ago. etcd wants URLs, not listeners, so another process could take
// the port in between; on loopback with ports from the kernel this is rare.
func freeLoopbackURL() (*url.URL, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a free port for etcd: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return nil, fmt.Errorf("find a free port for etcd: %w", err)
	}
	return &url.URL{Scheme: "http", Host: addr}, nil
}
