package jsonrpc_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// TestRecordedExchanges replays the frames real clients (bub's WebSocket
// client and its protocol tests) sent, each connection a raw WebSocket,
// and checks every frame the server sends back.
func TestRecordedExchanges(t *testing.T) {
	files, err := filepath.Glob("testdata/exchanges/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no exchanges in testdata/exchanges: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			s, err := bustest.ReadScript(f)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, bus.Options{}, jsonrpc.Options{RequirePayloadType: s.Has("require_payload_type")})
			conns := map[string]*raw{}
			for _, name := range s.Conns() {
				conns[name] = h.raw(t)
			}
			caps := bustest.Captures{}
			for _, st := range s.Steps {
				c := conns[st.Conn]
				if st.Send {
					c.send(caps.Expand(st.Frame))
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
				_, got, err := c.ws.Read(ctx)
				cancel()
				if err != nil {
					t.Fatalf("%s:%d: %s reads: %v", f, st.Line, st.Conn, err)
				}
				if err := caps.Match(st.Frame, got); err != nil {
					t.Fatalf("%s:%d: %s: %v", f, st.Line, st.Conn, err)
				}
			}
			for _, c := range conns {
				_ = c.ws.Close(websocket.StatusNormalClosure, "")
			}
		})
	}
}
