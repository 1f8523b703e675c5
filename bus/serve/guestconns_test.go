package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/guard"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/bus/serve"
)

// Peers without the token hold at most their share of bus.max_connections
// (half unless bus.max_guest_connections says): guests that fill it are
// refused with an error naming the limit, token holders still connect, and
// a guest that leaves gives its place back.
func TestGuestsCannotTakeEveryConnection(t *testing.T) {
	for _, tc := range []struct {
		name        string
		max, guests int
		wantGuests  int
	}{
		{"half by default", 6, 0, 3},
		{"configured share", 6, 2, 2},
		{"a share at the total is halved", 4, 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := open(t, memoryBus(t), serve.Options{WS: "127.0.0.1:0", TokenFile: filepath.Join(t.TempDir(), "bus.token"),
				Limits: serve.Limits{MaxConnections: tc.max, MaxGuestConnections: tc.guests}})
			tok, err := guard.ReadTokenFile(srv.TokenFile)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
			defer cancel()
			dial := func(id string, opts ...jsonrpc.DialOption) (*jsonrpc.Client, error) {
				c, err := jsonrpc.Dial(ctx, srv.WS, jsonrpc.ClientInfo{Name: id, Version: "1"}, append(opts, jsonrpc.WithClientID(id), jsonrpc.WithoutReconnect())...)
				if err == nil {
					t.Cleanup(func() { _ = c.Close() })
				}
				return c, err
			}
			var guests []*jsonrpc.Client
			for i := range tc.wantGuests {
				g, err := dial(fmt.Sprintf("guest-%d", i))
				if err != nil {
					t.Fatalf("guest %d of a share of %d: %v", i+1, tc.wantGuests, err)
				}
				guests = append(guests, g)
			}
			// The guests keep knocking; every one past the share is refused.
			for i := range 3 {
				_, err := dial(fmt.Sprintf("extra-%d", i))
				if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "bus.max_guest_connections") {
					t.Fatalf("guest past the share = %v, want a 503 naming bus.max_guest_connections", err)
				}
			}
			// Token holders take the rest of bus.max_connections. A refused
			// guest's socket counts against the listener until the server
			// has closed it, a moment after its answer: a holder may have to
			// knock again, but is never refused for the guests' share.
			for i := range tc.max - tc.wantGuests {
				var last error
				bustest.WaitFor(t, fmt.Sprintf("token holder %d to connect while the guests hold their share", i+1), func() bool {
					_, last = dial(fmt.Sprintf("host-%d", i), jsonrpc.WithToken(tok))
					if last != nil && strings.Contains(last.Error(), "bus.max_guest_connections") {
						t.Fatalf("a token holder was refused for the guests' share: %v", last)
					}
					return last == nil
				})
			}
			if _, err := dial("host-extra", jsonrpc.WithToken(tok)); err == nil || !strings.Contains(err.Error(), "bus.max_connections") {
				t.Fatalf("a connection past bus.max_connections = %v, want refused naming it", err)
			}
			_ = guests[0].Close()
			bustest.WaitFor(t, "a guest to connect once another left", func() bool {
				_, err := dial("guest-again")
				return err == nil
			})
		})
	}
}

// The envelope HTTP face's event streams are readable without the token,
// and each holds its connection: guests hold at most their share of them,
// and a token holder still gets one.
func TestGuestsCannotTakeEveryEventStream(t *testing.T) {
	srv := open(t, memoryBus(t), serve.Options{HTTP: "127.0.0.1:0", TokenFile: filepath.Join(t.TempDir(), "bus.token"),
		Limits: serve.Limits{MaxConnections: 4}})
	tok, err := guard.ReadTokenFile(srv.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	req := func(method, path, token string) *http.Response {
		t.Helper()
		r, err := http.NewRequest(method, srv.HTTP+path, strings.NewReader(`{"name":"s"}`))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	created := req("POST", "/api/sessions", tok)
	var s struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(created.Body).Decode(&s); err != nil || s.ID == "" {
		t.Fatalf("create a session: %d, %v", created.StatusCode, err)
	}
	created.Body.Close()
	events := "/api/sessions/" + s.ID + "/events"
	for i := range 2 {
		resp := req("GET", events, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("guest stream %d = %d, want 200", i+1, resp.StatusCode)
		}
		t.Cleanup(func() { resp.Body.Close() })
	}
	resp := req("GET", events, "")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "bus.max_guest_connections") {
		t.Fatalf("a third guest stream = %d %s, want 503 naming bus.max_guest_connections", resp.StatusCode, body)
	}
	var holder *http.Response
	bustest.WaitFor(t, "a token holder's stream while the guests hold their share", func() bool {
		holder = req("GET", events, tok)
		if holder.StatusCode != http.StatusOK {
			holder.Body.Close()
			return false
		}
		return true
	})
	holder.Body.Close()
}
