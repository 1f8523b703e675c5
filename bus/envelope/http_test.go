package envelope

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func httpServer(t *testing.T, b *Broker) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// post sends an envelope to POST /v1/envelopes and returns the HTTP status
// and the reply envelope.
func post(t *testing.T, srv *httptest.Server, body []byte) (int, Envelope) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/v1/envelopes", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e Envelope
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("reply is not an envelope: %v", err)
	}
	return resp.StatusCode, e
}

func postEnv(t *testing.T, srv *httptest.Server, e Envelope) Envelope {
	t.Helper()
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	_, r := post(t, srv, raw)
	return r
}

func TestHTTPEnvelopes(t *testing.T) {
	b := newTestBroker(t, Options{MaxFrameBytes: 512})
	srv := httpServer(t, b)
	s := newSession(t, b, "")
	addAgent(t, b, s, "w1", "")
	enc := func(e Envelope) []byte {
		raw, _ := json.Marshal(e)
		return raw
	}
	cases := []struct {
		name   string
		body   []byte
		status int
		code   string
	}{
		{"ok", enc(mk(t, TypeAgentList, "ui", s, nil)), http.StatusOK, ""},
		{"malformed", []byte("{nope"), http.StatusBadRequest, CodeInvalidJSON},
		{"empty body", nil, http.StatusBadRequest, CodeInvalidJSON},
		{"unknown type", enc(mk(t, "x.y", "ui", s, nil)), http.StatusBadRequest, CodeUnknownType},
		{"missing src", enc(mk(t, TypeAgentList, "", s, nil)), http.StatusBadRequest, CodeInvalidRequest},
		{"too large", enc(mk(t, TypeMessageCreated, "ui", s, Message{Text: strings.Repeat("a", 1000)})), http.StatusRequestEntityTooLarge, CodeTooLarge},
		{"not found", enc(mk(t, TypeAgentList, "ui", "nope", nil)), http.StatusNotFound, CodeNotFound},
		{"forbidden", enc(mk(t, TypeAgentUpdate, "w1", s, map[string]string{"id": "w2", "name": "x"})), http.StatusForbidden, CodeForbidden},
		{"conflict", enc(mk(t, TypeAgentAdd, "w2", s, map[string]string{"id": "w2", "name": "w1"})), http.StatusConflict, CodeConflict},
		{"stream needs SSE", enc(mk(t, TypeEventsStream, "ui", s, map[string]bool{"follow": true})), http.StatusBadRequest, CodeInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, r := post(t, srv, c.body)
			if status != c.status {
				t.Errorf("POST %s status = %d, want %d", c.name, status, c.status)
			}
			gotCode := ""
			if r.Error != nil {
				gotCode = r.Error.Code
			}
			if gotCode != c.code {
				t.Errorf("POST %s error code = %q, want %q", c.name, gotCode, c.code)
			}
			if c.code == "" && r.Status != StatusOK {
				t.Errorf("POST %s reply status = %q, want ok", c.name, r.Status)
			}
		})
	}
}

func TestHTTPAPIRoutes(t *testing.T) {
	b := newTestBroker(t, Options{})
	srv := httpServer(t, b)
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(data))
	}
	if code, body := call("GET", "/api/health", ""); code != 200 || body != `{"status":"ok"}` {
		t.Errorf("GET /api/health = %d %s, want 200 {\"status\":\"ok\"}", code, body)
	}
	code, body := call("POST", "/api/sessions", `{"name":"demo"}`)
	var info SessionInfo
	if err := json.Unmarshal([]byte(body), &info); code != http.StatusCreated || err != nil || info.Name != "demo" || info.ID == "" {
		t.Fatalf("POST /api/sessions = %d %s, want 201 with the session", code, body)
	}
	if code, body := call("POST", "/api/sessions", `[`); code != http.StatusBadRequest {
		t.Errorf("POST /api/sessions with bad JSON = %d %s, want 400", code, body)
	}
	if code, body := call("GET", "/api/sessions", ""); code != 200 || !strings.Contains(body, info.ID) {
		t.Errorf("GET /api/sessions = %d %s, want the new session", code, body)
	}
	addAgent(t, b, info.ID, "w1", "worker")
	if code, body := call("GET", "/api/sessions/"+info.ID+"/agents", ""); code != 200 || body != `{"agents":[{"id":"w1","name":"worker"}]}` {
		t.Errorf("GET agents = %d %s", code, body)
	}
	if code, _ := call("GET", "/api/sessions/nope/agents", ""); code != http.StatusNotFound {
		t.Errorf("GET agents of unknown session = %d, want 404", code)
	}
	msgs := "/api/sessions/" + info.ID + "/messages"
	for _, c := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"text":"  ","agent_ids":["w1"]}`, 400, `{"error":"missing text or agent_ids"}`},
		{`{"text":"hi","agent_ids":[]}`, 400, `{"error":"missing text or agent_ids"}`},
		{`{"text":"hi"}`, 400, `{"error":"missing text or agent_ids"}`},
		{`not json`, 400, `{"error":"missing text or agent_ids"}`},
		{`{"text":"hi","agent_ids":["w7","w8"]}`, 400, `{"error":"agent_ids not found"}`},
	} {
		if code, body := call("POST", msgs, c.body); code != c.status || body != c.want {
			t.Errorf("POST messages %s = %d %s, want %d %s", c.body, code, body, c.status, c.want)
		}
	}
	if code, _ := call("POST", "/api/sessions/nope/messages", `{"text":"hi","agent_ids":["w1"]}`); code != http.StatusNotFound {
		t.Errorf("POST messages to unknown session = %d, want 404", code)
	}
	n := len(history(t, b, info.ID))
	if code, body := call("POST", msgs, `{"text":"hello","agent_ids":["w7","w1"]}`); code != http.StatusAccepted {
		t.Fatalf("POST messages = %d %s, want 202", code, body)
	}
	evs := history(t, b, info.ID)[n:]
	if len(evs) != 1 || evs[0].Type != TypeMessageCreated || evs[0].Dst != "w1" {
		t.Fatalf("events after POST messages = %v, want one message.created to w1", types(evs))
	}
	if m := decodeAs[Message](t, evs[0]); m.Text != "hello" || m.Kind != KindUser {
		t.Errorf("posted message = %+v, want user message hello", m)
	}
}

type sseEvent struct {
	ID, Event string
	Env       Envelope
}

// openSSE connects to a session's event stream and returns its events;
// the channel closes when the stream ends.
func openSSE(t *testing.T, url, lastEventID string) (<-chan sseEvent, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	ch := make(chan sseEvent, 1024)
	if resp.StatusCode != http.StatusOK {
		close(ch)
		return ch, resp
	}
	go func() {
		defer close(ch)
		r := bufio.NewReader(resp.Body)
		var ev sseEvent
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				ch <- ev
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(line[6:]), &ev.Env); err != nil {
					t.Errorf("SSE data %q: %v", line, err)
				}
			}
		}
	}()
	return ch, resp
}

func nextSSE(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("event stream ended early")
		}
		return ev
	case <-time.After(waitLimit):
		t.Fatalf("no event within %v", waitLimit)
	}
	return sseEvent{}
}

func TestSSE(t *testing.T) {
	b := newTestBroker(t, Options{})
	srv := httpServer(t, b)
	s := newSession(t, b, "")
	addAgent(t, b, s, "w1", "")
	mustOK(t, do(t, b, mk(t, TypeMessageCreated, "w1", s, Message{Text: "one"})))
	url := srv.URL + "/v1/sessions/" + s + "/events"

	all, _ := openSSE(t, url+"?after=0", "")
	resumed, _ := openSSE(t, srv.URL+"/api/sessions/"+s+"/events", "2")
	live, _ := openSSE(t, url, "")
	for i, want := range []string{TypeSessionCreated, TypeAgentAdded, TypeMessageCreated} {
		ev := nextSSE(t, all)
		if ev.Event != want || ev.Env.Type != want || ev.ID != string(rune('1'+i)) || ev.Env.Seq != int64(i+1) {
			t.Fatalf("replayed event %d = id %s %s, want id %d %s", i, ev.ID, ev.Event, i+1, want)
		}
	}
	if ev := nextSSE(t, resumed); ev.Env.Seq != 3 {
		t.Fatalf("resume after Last-Event-ID 2 starts at seq %d, want 3", ev.Env.Seq)
	}
	// Live events reach every stream; closing the session ends them.
	mustOK(t, do(t, b, mk(t, TypeMessageCreated, "w1", s, Message{Text: "two"})))
	mustOK(t, do(t, b, mk(t, TypeSessionClose, "ui", s, nil)))
	for name, ch := range map[string]<-chan sseEvent{"all": all, "resumed": resumed, "live": live} {
		var got []int64
		for ev := range ch {
			got = append(got, ev.Env.Seq)
		}
		if d := cmp.Diff([]int64{4, 5}, got); d != "" {
			t.Errorf("%s stream after replay (-want +got):\n%s", name, d)
		}
	}
	// A closed session replays and ends at once.
	closed, _ := openSSE(t, url+"?after=3", "")
	var got []string
	for ev := range closed {
		got = append(got, ev.Event)
	}
	if d := cmp.Diff([]string{TypeMessageCreated, TypeSessionClosed}, got); d != "" {
		t.Errorf("closed session stream (-want +got):\n%s", d)
	}

	if _, resp := openSSE(t, srv.URL+"/v1/sessions/nope/events", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("SSE of unknown session = %d, want 404", resp.StatusCode)
	}
	if _, resp := openSSE(t, url, "abc"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("SSE with bad Last-Event-ID = %d, want 400", resp.StatusCode)
	}
}

func TestSSEForOneAgent(t *testing.T) {
	b := newTestBroker(t, Options{})
	srv := httpServer(t, b)
	s := newSession(t, b, "")
	for _, id := range []string{"owner", "w1", "w2"} {
		addAgent(t, b, s, id, "")
	}
	mustOK(t, do(t, b, mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "g", Actions: []Action{
		msgAction("w1", "a1", 0, KindUser, "for w1"), msgAction("w2", "a2", 1, KindUser, "for w2")}})))
	mustOK(t, do(t, b, mk(t, TypeMessageCreated, "w1", s, Message{Text: "from w1 to all"})))
	mustOK(t, do(t, b, mk(t, TypeMessageCreated, "owner", s, Message{Text: "from owner to all"})))
	mustOK(t, do(t, b, mk(t, TypeSessionClose, "owner", s, nil)))
	ch, _ := openSSE(t, srv.URL+"/v1/sessions/"+s+"/events?after=0&agent=w1", "")
	var got []string
	for ev := range ch {
		got = append(got, ev.Env.Type+" "+ev.Env.Src+">"+ev.Env.Dst)
	}
	// Not w1's own agent.added or message, not w2's action, not the
	// results the bus sends the owner when the session closes.
	want := []string{
		"session.created ui>", "agent.added owner>", "agent.added w2>",
		"action.submit owner>w1", "message.created owner>", "session.closed owner>",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events for w1 (-want +got):\n%s", d)
	}
}

// Open sessions are capped (bus.max_sessions): one more is refused with a
// 429 naming the key, and closing one makes room.
func TestSessionCap(t *testing.T) {
	b := newTestBroker(t, Options{MaxSessions: 2, Logger: quietLogger()})
	srv := httpServer(t, b)
	create := func() (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/api/sessions", "application/json", strings.NewReader(`{"name":"s"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			ID    string `json:"id"`
			Error string `json:"error"`
		}
		raw, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(raw, &out)
		if out.ID == "" {
			return resp.StatusCode, string(raw)
		}
		return resp.StatusCode, out.ID
	}
	_, first := create()
	create()
	code, body := create()
	if code != http.StatusTooManyRequests || !strings.Contains(body, "bus.max_sessions") {
		t.Fatalf("third session = %d %s, want 429 naming bus.max_sessions", code, body)
	}
	mustOK(t, do(t, b, mk(t, TypeSessionClose, "c", first, nil)))
	if code, body := create(); code != http.StatusCreated {
		t.Errorf("session after closing one = %d %s, want 201", code, body)
	}
}
