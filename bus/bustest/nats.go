package bustest

import (
	"fmt"
	"net"
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
