package envelope

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/bustest"
)

// waitLimit is the failure deadline for waits; tests never sleep.
const waitLimit = bustest.Deadline

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestBroker(t *testing.T, opts Options) *Broker {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	b := NewBroker(opts)
	t.Cleanup(func() { b.Close() })
	return b
}

// mk builds a request envelope; payload may be a struct, a map or a
// json.RawMessage.
func mk(t *testing.T, typ, src, sess string, payload any) Envelope {
	t.Helper()
	e := Envelope{V: Version, Type: typ, ID: NewID(), TS: FormatTime(time.Now()), Src: src, Session: sess}
	switch p := payload.(type) {
	case nil:
	case json.RawMessage:
		e.Payload = p
	case string:
		e.Payload = json.RawMessage(p)
	default:
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal payload: %v", err)
		}
		e.Payload = raw
	}
	return e
}

func do(t *testing.T, b *Broker, e Envelope) Envelope {
	t.Helper()
	replies := b.Handle(context.Background(), e)
	if len(replies) != 1 {
		t.Fatalf("Handle(%s) returned %d replies, want 1", e.Type, len(replies))
	}
	r := replies[0]
	if r.Corr != e.ID {
		t.Fatalf("Handle(%s) reply corr = %q, want %q", e.Type, r.Corr, e.ID)
	}
	return r
}

func mustOK(t *testing.T, r Envelope) Envelope {
	t.Helper()
	if err := r.Err(); err != nil {
		t.Fatalf("%s reply = error %v, want success", r.Type, err)
	}
	return r
}

func newSession(t *testing.T, b *Broker, name string) string {
	t.Helper()
	r := mustOK(t, do(t, b, mk(t, TypeSessionCreate, "ui", "", map[string]string{"name": name})))
	if r.Session == "" {
		t.Fatalf("session.create reply has no session")
	}
	return r.Session
}

func addAgent(t *testing.T, b *Broker, sess, id, name string) {
	t.Helper()
	mustOK(t, do(t, b, mk(t, TypeAgentAdd, id, sess, map[string]string{"id": id, "name": name})))
}

func history(t *testing.T, b *Broker, sess string) []Envelope {
	t.Helper()
	r := mustOK(t, do(t, b, mk(t, TypeEventsHistory, "ui", sess, map[string]int{"limit": 100000})))
	var p struct {
		Records []Envelope `json:"records"`
	}
	if err := r.Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p.Records
}

func types(evs []Envelope) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func decodeAs[T any](t *testing.T, e Envelope) T {
	t.Helper()
	var v T
	if err := e.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", e.Type, err)
	}
	return v
}

func msgAction(dst, id string, index int, kind, text string) Action {
	return Action{Type: ActionMessage, Dst: dst, ActionID: id, ActionIndex: IntPtr(index), Kind: kind, Text: text}
}

func ctlAction(dst, id string, index int, cmd string) Action {
	return Action{Type: ActionControl, Dst: dst, ActionID: id, ActionIndex: IntPtr(index), Command: cmd}
}

// sockPath returns a short socket path (Unix socket paths are limited to
// about 100 bytes, and t.TempDir paths can be longer).
func sockPath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "coord.sock")
}

// serveUnix runs b on a fresh socket until the test ends.
func serveUnix(t *testing.T, b *Broker) string {
	t.Helper()
	path := sockPath(t)
	l, err := ListenUnix(path)
	if err != nil {
		t.Fatalf("ListenUnix(%s) = %v", path, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve = %v, want nil after cancel", err)
			}
		case <-time.After(waitLimit):
			t.Errorf("Serve did not return after cancel")
		}
	})
	return path
}

func dial(t *testing.T, path string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func cdo(t *testing.T, c *Client, e Envelope) Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	r, err := c.Do(ctx, e)
	if err != nil {
		t.Fatalf("Do(%s) = %v", e.Type, err)
	}
	return r
}

// next returns the next pushed envelope matching keep, failing after waitLimit.
func next(t *testing.T, c *Client, keep func(Envelope) bool) Envelope {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case e, ok := <-c.Events():
			if !ok {
				t.Fatalf("connection closed while waiting for an event")
			}
			if keep(e) {
				return e
			}
		case <-deadline:
			t.Fatalf("no matching event within %v", waitLimit)
		}
	}
}

func ofType(typ string) func(Envelope) bool {
	return func(e Envelope) bool { return e.Type == typ }
}
