package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/weavehq/weave/bus/guard"
)

// ListenAndServe serves on addr until ctx ends. It refuses an address
// beyond loopback when the server has no token, whatever Options.Loopback
// said.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	if !guard.IsLoopback(addr) && s.opts.Token == "" {
		return fmt.Errorf("the bus WebSocket would listen on %s, beyond loopback, without a token: set bus.token or listen on 127.0.0.1", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for the bus WebSocket on %s: %w", addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends, then closes the connections. Requests
// from other web origins or naming another host are refused, and slow or
// surplus clients cut off (guard.Harden).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs, limited := guard.Harden(ln, s.opts.Loopback, s, guard.HTTPLimits{MaxConns: s.opts.MaxConnections})
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(limited) }()
	select {
	case err := <-errc:
		_ = s.Close()
		return fmt.Errorf("serve the bus WebSocket on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	_ = s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stop the bus WebSocket on %s: %w", ln.Addr(), err)
	}
	return nil
}
