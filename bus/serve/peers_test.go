package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/envelope"
	"github.com/weavehq/weave/bus/guard"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/bus/serve"
)

// A loopback peer without the token cannot subscribe to the hook, agent or
// system topics however it spells the pattern (issue 23: \hook:* was
// accepted and answered every hook of a run); \* matches only the topic
// "*", is allowed, and hears nothing of a hook request.
func TestGuestCannotSpellItsWayToProtectedTopics(t *testing.T) {
	b := memoryBus(t)
	srv := open(t, b, serve.Options{WS: "127.0.0.1:0", TokenFile: filepath.Join(t.TempDir(), "bus.token")})
	tok, err := guard.ReadTokenFile(srv.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	guest, err := jsonrpc.Dial(ctx, srv.WS, jsonrpc.ClientInfo{Name: "guest", Version: "1"}, jsonrpc.WithClientID("guest"), jsonrpc.WithoutReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer guest.Close()
	var asked atomic.Int32
	modify := func(context.Context, bus.Message) (bus.Ack, error) {
		asked.Add(1)
		return bus.Ack{Processed: true, Result: json.RawMessage(`{"action":"modify","args":{"command":"echo HIJACKED"}}`)}, nil
	}
	for _, pattern := range bustest.ProtectedSpellings {
		err := guest.Subscribe(ctx, pattern, modify, jsonrpc.SubscribeOptions{Policy: bus.ContinueAll})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeForbidden {
			t.Errorf("token-less Subscribe(%q) = %v, want code %d (forbidden)", pattern, err, jsonrpc.CodeForbidden)
		}
	}
	if err := guest.Subscribe(ctx, `\*`, modify, jsonrpc.SubscribeOptions{Policy: bus.ContinueAll}); err != nil {
		t.Errorf(`token-less Subscribe(\*) = %v, want success: it matches only "*"`, err)
	}

	host, err := jsonrpc.Dial(ctx, srv.WS, jsonrpc.ClientInfo{Name: "host", Version: "1"}, jsonrpc.WithToken(tok), jsonrpc.WithoutReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	for _, topic := range []string{"hook:tool.execute.before", "agent:tapestry", "system:dead-letter"} {
		res, err := host.SendMessage(ctx, topic, json.RawMessage(`{"tool":"bash","args":{"command":"echo original"}}`))
		if err != nil || res.Delivered != 0 {
			t.Errorf("host SendMessage(%s) = %+v, %v; want no subscriber", topic, res, err)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the token-less peer was asked %d times, want never", n)
	}
}

// A peer without the token cannot spend the kept topics everybody shares
// (issue 23: one filled bus.max_topics with issue:N, and creating an
// envelope session then answered 500). Each guest connection may use a
// tenth of bus.max_topics, all guests together a quarter; the refusals name
// the limit; another guest, the token holders and the envelope face still
// create theirs. When the bus itself is full, session.create answers 429
// naming bus.max_topics.
func TestGuestCannotFillTheTopicCap(t *testing.T) {
	o := bus.DefaultOptions()
	o.MaxTopics = 100 // guests: 10 per connection, 25 together
	b, err := bus.NewMemory(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	srv := open(t, b, serve.Options{WS: "127.0.0.1:0", HTTP: "127.0.0.1:0", TokenFile: filepath.Join(t.TempDir(), "bus.token")})
	tok, err := guard.ReadTokenFile(srv.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	dial := func(id string, opts ...jsonrpc.DialOption) *jsonrpc.Client {
		t.Helper()
		c, err := jsonrpc.Dial(ctx, srv.WS, jsonrpc.ClientInfo{Name: id, Version: "1"}, append(opts, jsonrpc.WithClientID(id), jsonrpc.WithoutReconnect())...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// fill sends on new issue topics until refused, and returns how many
	// were taken and the refusal.
	next := 0
	fill := func(c *jsonrpc.Client) (int, *jsonrpc.Error) {
		t.Helper()
		for n := 0; n < o.MaxTopics+1; n++ {
			_, err := c.SendMessage(ctx, fmt.Sprintf("issue:%d", next), json.RawMessage(`{}`))
			if err != nil {
				var rpcErr *jsonrpc.Error
				if !errors.As(err, &rpcErr) {
					t.Fatalf("SendMessage(issue:%d) = %v, want a JSON-RPC error", next, err)
				}
				return n, rpcErr
			}
			next++
		}
		return o.MaxTopics + 1, nil
	}

	first := dial("guest-1")
	n, refusal := fill(first)
	if n != 10 || refusal == nil || refusal.Code != jsonrpc.CodeLimit || !strings.Contains(refusal.Message, "per connection") || !strings.Contains(refusal.Message, "bus.max_topics") {
		t.Fatalf("a token-less connection took %d new kept topics, then %v; want 10, then code %d naming its limit", n, refusal, jsonrpc.CodeLimit)
	}
	if _, err := first.SendMessage(ctx, "issue:0", json.RawMessage(`{}`)); err != nil {
		t.Errorf("SendMessage on a topic the connection already used = %v, want success", err)
	}
	if _, err := first.SendMessage(ctx, "inbound:new", json.RawMessage(`{}`)); err != nil {
		t.Errorf("SendMessage on a plain topic past the share = %v, want success: plain topics keep nothing", err)
	}
	// A second guest still creates its own.
	if n, refusal := fill(dial("guest-2")); n != 10 {
		t.Errorf("a second token-less connection took %d new kept topics (%v), want its own 10", n, refusal)
	}
	// Reconnecting does not give a guest more: all guests share 25.
	total := 20
	for i := 3; ; i++ {
		n, refusal := fill(dial(fmt.Sprintf("guest-%d", i)))
		total += n
		if n < 10 {
			if refusal == nil || refusal.Code != jsonrpc.CodeLimit || !strings.Contains(refusal.Message, "without the bus token have used") {
				t.Errorf("refusal past the guests' share = %v, want code %d naming it", refusal, jsonrpc.CodeLimit)
			}
			break
		}
		if i > 20 {
			t.Fatalf("token-less connections took %d kept topics, more than the guests' share", total)
		}
	}
	if total != 25 {
		t.Errorf("token-less connections took %d kept topics in all, want 25 (a quarter of bus.max_topics)", total)
	}

	// The token holders and the envelope face still create theirs.
	if code, _ := status(t, "POST", srv.HTTP+"/api/sessions", tok); code != http.StatusCreated {
		t.Fatalf("session.create after the guests = %d, want 201", code)
	}
	host := dial("host", jsonrpc.WithToken(tok))
	if _, err := host.SendMessage(ctx, "issue:host", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("the token holder's new kept topic = %v, want success", err)
	}
	// Filled by a token holder, the bus refuses with its own limit, named.
	if n, refusal := fill(host); refusal == nil || refusal.Code != jsonrpc.CodeLimit || !strings.Contains(refusal.Message, "bus.max_topics") {
		t.Fatalf("the token holder took %d kept topics, then %v; want code %d naming bus.max_topics", n, refusal, jsonrpc.CodeLimit)
	}
	req, err := http.NewRequest("POST", srv.HTTP+"/api/sessions", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "bus.max_topics") {
		t.Errorf("session.create on a full bus = %d %s, want 429 naming bus.max_topics", resp.StatusCode, body)
	}
}

// One socket client cannot take every session the envelope face holds:
// each connection may keep half of bus.max_sessions open; past it
// session.create answers "limit" naming it, while another client still
// creates sessions, and closing one makes room.
func TestEnvelopeSessionsPerConnection(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "bus.sock")
	open(t, memoryBus(t), serve.Options{UDS: sock, Limits: serve.Limits{MaxSessions: 4}})
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	dial := func() *envelope.Client {
		t.Helper()
		c, err := envelope.Dial(ctx, sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	create := func(c *envelope.Client) (string, error) {
		t.Helper()
		r, err := c.Do(ctx, envelope.Envelope{Type: envelope.TypeSessionCreate, Src: "peer"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Session, r.Err()
	}
	first := dial()
	var ids []string
	for range 2 {
		id, err := create(first)
		if err != nil {
			t.Fatalf("session.create = %v, want success", err)
		}
		ids = append(ids, id)
	}
	_, err := create(first)
	var e *envelope.Error
	if !errors.As(err, &e) || e.Code != envelope.CodeLimit || !strings.Contains(e.Message, "bus.max_sessions") || !strings.Contains(e.Message, "this connection") {
		t.Fatalf("a third session on one connection = %v, want code %q naming its limit", err, envelope.CodeLimit)
	}
	if _, err := create(dial()); err != nil {
		t.Errorf("session.create on a second connection = %v, want success", err)
	}
	r, err := first.Do(ctx, envelope.Envelope{Type: envelope.TypeSessionClose, Src: "peer", Session: ids[0]})
	if err != nil || r.Err() != nil {
		t.Fatalf("session.close = %v, %v", err, r.Err())
	}
	if _, err := create(first); err != nil {
		t.Errorf("session.create after closing one = %v, want success", err)
	}
}
