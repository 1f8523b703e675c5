package bustest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// NATS is an embedded nats-server with JetStream, listening on loopback
// and keeping its store in a temp dir, for the tests of the NATS backend
// and of everything that opens one.
type NATS struct {
	t    testing.TB
	opts *server.Options

	mu  sync.Mutex
	srv *server.Server
}

// StartNATS starts a server that is shut down when the test ends. A
// restart (Stop, then Start or TryStart) keeps its port.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	ns := &NATS{t: t, opts: &server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}}
	ns.Start()
	ns.opts.Port = ns.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(ns.Stop)
	return ns
}

// StartNATSConfig starts a server from conf, a nats-server configuration
// (accounts, users and their permissions, authorization, tls), listening
// on a free loopback port with JetStream in a temp dir whatever conf says
// about those. Paths in conf are taken as they are written. It is shut down
// when the test ends.
func StartNATSConfig(t testing.TB, conf string) *NATS {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats config: %v", err)
	}
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	ns := &NATS{t: t, opts: opts}
	ns.Start()
	ns.opts.Port = ns.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(ns.Stop)
	return ns
}

// Start starts the server again after Stop, failing the test if it cannot.
func (ns *NATS) Start() {
	ns.t.Helper()
	if err := ns.TryStart(); err != nil {
		ns.t.Fatal(err)
	}
}

// TryStart starts the server again after Stop; unlike Start it may run off
// the test's goroutine.
func (ns *NATS) TryStart() error {
	srv, err := server.NewServer(ns.opts)
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(Deadline) {
		srv.Shutdown()
		return fmt.Errorf("nats server not ready after %s", Deadline)
	}
	ns.mu.Lock()
	ns.srv = srv
	ns.mu.Unlock()
	return nil
}

// Stop shuts the server down and waits until it is.
func (ns *NATS) Stop() {
	ns.mu.Lock()
	srv := ns.srv
	ns.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Shutdown()
	srv.WaitForShutdown()
}

// URL is the server's client URL (nats://127.0.0.1:port).
func (ns *NATS) URL() string {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.srv.ClientURL()
}
