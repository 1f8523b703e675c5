package jsonrpctest

import (
	"net"
	"net/http"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// Bus is a memory bus served over WebSocket.
type Bus struct {
	// Bus is the memory bus behind the face.
	Bus *bus.Memory
	// URL is the face's address, ws://127.0.0.1:port.
	URL string
}

// Serve serves a new memory bus with the face and the admin routes, both
// guarded by token when it is not empty, until the test ends.
func Serve(t testing.TB, token string) *Bus {
	t.Helper()
	b, err := bus.NewMemory(bus.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := jsonrpc.NewServer(b, jsonrpc.Options{Loopback: true, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/bus/", jsonrpc.AdminHandler(b, token))
	mux.Handle("/", srv)
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		_ = hs.Close()
		_ = b.Close()
	})
	return &Bus{Bus: b, URL: "ws://" + ln.Addr().String()}
}
