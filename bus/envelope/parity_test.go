package envelope

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scenario drives one session through every kind of event. call sends an
// envelope over some face and returns the reply; follow starts that face's
// event stream for the session (from the first event).
func scenario(t *testing.T, call func(Envelope) Envelope, follow func(session string)) string {
	t.Helper()
	ok := func(e Envelope) Envelope {
		t.Helper()
		r := call(e)
		if err := r.Err(); err != nil {
			t.Fatalf("%s from %s = %v", e.Type, e.Src, err)
		}
		return r
	}
	s := ok(mk(t, TypeSessionCreate, "owner", "", map[string]string{"name": "parity"})).Session
	follow(s)
	for _, a := range [][2]string{{"owner", "Owner"}, {"w1", "one"}, {"w2", ""}} {
		ok(mk(t, TypeAgentAdd, a[0], s, map[string]string{"id": a[0], "name": a[1]}))
	}
	ok(mk(t, TypeAgentUpdate, "w1", s, map[string]string{"id": "w1", "name": "worker"}))
	ok(mk(t, TypeMessageCreated, "owner", s, Message{Text: "hello all", Kind: KindUser}))
	ok(mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "g1", Context: &Context{ContextID: "c1"}, TaskID: "t1", Actions: []Action{
		msgAction("worker", "a0", 0, KindUser, "build it"),
		ctlAction("w2", "a1", 1, "compact"),
		ctlAction("w1", "a2", 2, "review"),
	}}))
	// The same submit again changes nothing.
	if r := call(mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "g1", Actions: []Action{msgAction("w1", "zz", 0, KindUser, "x")}})); r.Status != StatusDuplicate {
		t.Fatalf("resubmit status = %q, want duplicate", r.Status)
	}
	ok(mk(t, TypeActionResult, "w1", s, Result{GroupID: "g1", ActionID: "a0", ActionIndex: IntPtr(0), Status: ResultAccepted}))
	ok(mk(t, TypeTaskUpdated, "w1", s, TaskUpdate{TaskID: "t1", Status: TaskStatusRunning}))
	ok(mk(t, TypeActionResult, "w2", s, Result{GroupID: "g1", ActionID: "a1", ActionIndex: IntPtr(1), Status: ResultCompleted}))
	ok(mk(t, TypeActionResult, "w1", s, Result{GroupID: "g1", ActionID: "a2", ActionIndex: IntPtr(2), Status: ResultBlocked, Detail: "busy"}))
	ok(mk(t, TypeActionSubmit, "w1", s, Submit{GroupID: "g2", Actions: []Action{
		{Type: ActionMessage, Dst: "owner", ActionID: "r1", ActionIndex: IntPtr(0), Kind: KindReply, Text: "built", ReplyToActionID: "a0"}}}))
	ok(mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "g3", Actions: []Action{
		{Type: ActionMessage, Dst: "w1", ActionID: "r2", ActionIndex: IntPtr(0), Kind: KindReply, Text: "thanks", ReplyToActionID: "r1"}}}))
	if r := call(mk(t, TypeActionSubmit, "w2", s, Submit{GroupID: "g4", Context: &Context{ContextID: "c1"},
		Actions: []Action{msgAction("w1", "x1", 0, KindUser, "mine now")}})); r.Error == nil || r.Error.Code != CodeForbidden {
		t.Fatalf("non-owner relay = %+v, want forbidden", r.Error)
	}
	ok(mk(t, TypeTaskDone, "w1", s, TaskDone{TaskID: "t1", Summary: "built"}))
	ok(mk(t, TypeActionResult, "w1", s, Result{GroupID: "g1", ActionID: "a0", ActionIndex: IntPtr(0), Status: ResultCompleted}))
	ok(mk(t, TypeAgentRemove, "owner", s, map[string]string{"id": "w2"}))
	ok(mk(t, TypeSessionClose, "owner", s, nil))
	return s
}

var tsPattern = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)

// normalize drops what differs between runs: ids, timestamps, session id.
func normalize(t *testing.T, evs []Envelope, session string) []map[string]any {
	t.Helper()
	out := make([]map[string]any, 0, len(evs))
	for _, e := range evs {
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		s := tsPattern.ReplaceAllString(strings.ReplaceAll(string(raw), session, "SESSION"), "TS")
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "id")
		out = append(out, m)
	}
	return out
}

func TestFacesGiveTheSameEvents(t *testing.T) {
	// Over the socket: commands on one connection, the stream on another.
	ub := newTestBroker(t, Options{})
	path := serveUnix(t, ub)
	driver, watcher := dial(t, path), dial(t, path)
	var streamed []Envelope
	var streamCorr string
	us := scenario(t, func(e Envelope) Envelope { return cdo(t, driver, e) }, func(s string) {
		r := mustOK(t, cdo(t, watcher, mk(t, TypeEventsStream, "watcher", s, map[string]any{"follow": true, "after": 0})))
		streamCorr = r.Corr
	})
	for {
		rec := next(t, watcher, ofType(TypeEventsRecord))
		if rec.Corr != streamCorr {
			t.Fatalf("events.record corr = %q, want the stream request id %q", rec.Corr, streamCorr)
		}
		var ev Envelope
		if err := json.Unmarshal(rec.Payload, &ev); err != nil {
			t.Fatal(err)
		}
		streamed = append(streamed, ev)
		if ev.Type == TypeSessionClosed {
			break
		}
	}
	uds := normalize(t, streamed, us)

	// Over HTTP: POST /v1/envelopes and the SSE stream.
	hb := newTestBroker(t, Options{})
	srv := httpServer(t, hb)
	var sse <-chan sseEvent
	hs := scenario(t, func(e Envelope) Envelope { return postEnv(t, srv, e) }, func(s string) {
		sse, _ = openSSE(t, srv.URL+"/v1/sessions/"+s+"/events?after=0", "")
	})
	var got []Envelope
	for ev := range sse {
		got = append(got, ev.Env)
	}
	web := normalize(t, got, hs)

	if d := cmp.Diff(uds, web); d != "" {
		t.Fatalf("socket and HTTP streams differ (-socket +http):\n%s", d)
	}
	// And the streams are the logs.
	if d := cmp.Diff(normalize(t, history(t, ub, us), us), uds); d != "" {
		t.Errorf("socket stream differs from the log (-log +stream):\n%s", d)
	}
	wantTypes := []string{
		TypeSessionCreated, TypeAgentAdded, TypeAgentAdded, TypeAgentAdded, TypeAgentUpdated,
		TypeMessageCreated, TypeActionSubmit, TypeActionSubmit,
		TypeActionResult, TypeTaskUpdated, TypeActionResult, TypeActionResult,
		TypeActionSubmit, TypeActionResult, // the reply, then the loop guard's rejection
		TypeTaskDone, TypeActionResult, TypeAgentRemoved,
		// a2 (blocked is not terminal) and r1 never finished: closing ends them.
		TypeActionResult, TypeActionResult, TypeSessionClosed,
	}
	var gotTypes []string
	for _, m := range uds {
		gotTypes = append(gotTypes, m["type"].(string))
	}
	if d := cmp.Diff(wantTypes, gotTypes); d != "" {
		t.Errorf("event types (-want +got):\n%s", d)
	}
}
