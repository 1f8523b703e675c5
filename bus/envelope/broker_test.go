package envelope

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/bus"
)

// fixture is a session with an owner and two workers; "c1" is a
// conversation owned by "owner", action g1/a1 is pending at w1 and g0/a0
// finished.
type fixture struct {
	b      *Broker
	s      string
	closed string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "main")
	addAgent(t, b, s, "owner", "Owner")
	addAgent(t, b, s, "w1", "worker")
	addAgent(t, b, s, "w2", "")
	mustOK(t, do(t, b, mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "g0",
		Actions: []Action{ctlAction("w1", "a0", 0, "compact")}})))
	mustOK(t, do(t, b, mk(t, TypeActionResult, "w1", s, Result{GroupID: "g0", ActionID: "a0", ActionIndex: IntPtr(0), Status: ResultCompleted})))
	mustOK(t, do(t, b, mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "g1", Context: &Context{ContextID: "c1"},
		Actions: []Action{msgAction("w1", "a1", 0, KindUser, "do it")}})))
	closed := newSession(t, b, "old")
	mustOK(t, do(t, b, mk(t, TypeSessionClose, "ui", closed, nil)))
	return fixture{b: b, s: s, closed: closed}
}

func TestValidation(t *testing.T) {
	type tc struct {
		name string
		env  func(t *testing.T, f fixture) Envelope
		code string
	}
	env := func(typ, src string, payload any) func(*testing.T, fixture) Envelope {
		return func(t *testing.T, f fixture) Envelope { return mk(t, typ, src, f.s, payload) }
	}
	with := func(fn func(e *Envelope), base func(*testing.T, fixture) Envelope) func(*testing.T, fixture) Envelope {
		return func(t *testing.T, f fixture) Envelope {
			e := base(t, f)
			fn(&e)
			return e
		}
	}
	submit := func(src string, ctx *Context, actions ...Action) func(*testing.T, fixture) Envelope {
		return env(TypeActionSubmit, src, Submit{GroupID: "gx", Context: ctx, Actions: actions})
	}
	result := func(src, group, action string, index *int, status string) func(*testing.T, fixture) Envelope {
		return env(TypeActionResult, src, Result{GroupID: group, ActionID: action, ActionIndex: index, Status: status})
	}
	list := env(TypeAgentList, "ui", nil)
	cases := []tc{
		// Every envelope.
		{"missing type", with(func(e *Envelope) { e.Type = "" }, list), CodeInvalidRequest},
		{"missing id", with(func(e *Envelope) { e.ID = "" }, list), CodeInvalidRequest},
		{"missing src", with(func(e *Envelope) { e.Src = "" }, list), CodeInvalidRequest},
		{"wrong version", with(func(e *Envelope) { e.V = 2 }, list), CodeInvalidRequest},
		{"missing version", with(func(e *Envelope) { e.V = 0 }, list), CodeInvalidRequest},
		{"bad ts", with(func(e *Envelope) { e.TS = "yesterday" }, list), CodeInvalidRequest},
		{"negative seq", with(func(e *Envelope) { e.Seq = -1 }, list), CodeInvalidRequest},
		{"payload not an object", env(TypeAgentList, "ui", "[1,2]"), CodeInvalidRequest},
		{"unknown type", env("agent.dance", "ui", nil), CodeUnknownType},
		// Sessions.
		{"no session", with(func(e *Envelope) { e.Session = "" }, list), CodeInvalidRequest},
		{"unknown session", with(func(e *Envelope) { e.Session = "nope" }, list), CodeNotFound},
		{"closed session", func(t *testing.T, f fixture) Envelope {
			return mk(t, TypeAgentAdd, "x", f.closed, map[string]string{"id": "x"})
		}, CodeConflict},
		{"session name wrong type", env(TypeSessionCreate, "ui", `{"name":7}`), CodeInvalidRequest},
		// Agents.
		{"add for someone else", env(TypeAgentAdd, "w1", map[string]string{"id": "w9"}), CodeForbidden},
		{"add with taken name", env(TypeAgentAdd, "w9", map[string]string{"id": "w9", "name": "worker"}), CodeConflict},
		{"add with a name that is an id", env(TypeAgentAdd, "w9", map[string]string{"id": "w9", "name": "w2"}), CodeConflict},
		{"remove without id", env(TypeAgentRemove, "ui", nil), CodeInvalidRequest},
		{"remove unknown", env(TypeAgentRemove, "ui", map[string]string{"id": "w9"}), CodeNotFound},
		{"update other agent", env(TypeAgentUpdate, "w1", map[string]string{"id": "w2", "name": "x"}), CodeForbidden},
		{"update empty name", env(TypeAgentUpdate, "w1", map[string]string{"id": "w1", "name": ""}), CodeInvalidRequest},
		{"update blank name", env(TypeAgentUpdate, "w1", map[string]string{"id": "w1", "name": "  "}), CodeInvalidRequest},
		{"update without id", env(TypeAgentUpdate, "w1", map[string]string{"name": "x"}), CodeInvalidRequest},
		{"update unknown agent", env(TypeAgentUpdate, "w9", map[string]string{"id": "w9", "name": "x"}), CodeNotFound},
		{"update to taken name", env(TypeAgentUpdate, "w2", map[string]string{"id": "w2", "name": "Owner"}), CodeConflict},
		// Messages.
		{"message without text", env(TypeMessageCreated, "owner", map[string]string{"kind": "user"}), CodeInvalidRequest},
		{"message blank text", env(TypeMessageCreated, "owner", map[string]string{"text": " \n"}), CodeInvalidRequest},
		{"message payload_ref", env(TypeMessageCreated, "owner", map[string]string{"text": "hi", "payload_ref": "blob:1"}), CodeInvalidRequest},
		{"message bad kind", env(TypeMessageCreated, "owner", map[string]string{"text": "hi", "kind": "shout"}), CodeInvalidRequest},
		{"message text not a string", env(TypeMessageCreated, "owner", `{"text":5}`), CodeInvalidRequest},
		{"message to unknown agent", with(func(e *Envelope) { e.Dst = "w9" }, env(TypeMessageCreated, "owner", map[string]string{"text": "hi"})), CodeNotFound},
		// Actions.
		{"submit without group", env(TypeActionSubmit, "owner", Submit{Actions: []Action{msgAction("w1", "b1", 0, KindUser, "x")}}), CodeInvalidRequest},
		{"submit without actions", env(TypeActionSubmit, "owner", Submit{GroupID: "gx"}), CodeInvalidRequest},
		{"action without dst", submit("owner", nil, msgAction("", "b1", 0, KindUser, "x")), CodeInvalidRequest},
		{"action without id", submit("owner", nil, msgAction("w1", "", 0, KindUser, "x")), CodeInvalidRequest},
		{"action without index", submit("owner", nil, Action{Type: ActionMessage, Dst: "w1", ActionID: "b1", Kind: KindUser, Text: "x"}), CodeInvalidRequest},
		{"action negative index", submit("owner", nil, msgAction("w1", "b1", -1, KindUser, "x")), CodeInvalidRequest},
		{"action without type", submit("owner", nil, Action{Dst: "w1", ActionID: "b1", ActionIndex: IntPtr(0), Kind: KindUser, Text: "x"}), CodeInvalidRequest},
		{"action bad type", submit("owner", nil, Action{Type: "poke", Dst: "w1", ActionID: "b1", ActionIndex: IntPtr(0)}), CodeInvalidRequest},
		{"message action without kind", submit("owner", nil, msgAction("w1", "b1", 0, "", "x")), CodeInvalidRequest},
		{"message action kind system", submit("owner", nil, msgAction("w1", "b1", 0, KindSystem, "x")), CodeInvalidRequest},
		{"message action blank text", submit("owner", nil, msgAction("w1", "b1", 0, KindUser, " ")), CodeInvalidRequest},
		{"control action without command", submit("owner", nil, ctlAction("w1", "b1", 0, "")), CodeInvalidRequest},
		{"duplicate action id", submit("owner", nil, msgAction("w1", "b1", 0, KindUser, "x"), msgAction("w2", "b1", 1, KindUser, "y")), CodeInvalidRequest},
		{"duplicate action index", submit("owner", nil, msgAction("w1", "b1", 0, KindUser, "x"), msgAction("w2", "b2", 0, KindUser, "y")), CodeInvalidRequest},
		{"reused action id", submit("owner", nil, msgAction("w1", "a1", 0, KindUser, "x")), CodeConflict},
		{"reused group id", env(TypeActionSubmit, "owner", Submit{GroupID: "g1", Actions: []Action{msgAction("w1", "b1", 0, KindUser, "x")}}), ""},
		{"unknown target", submit("owner", nil, msgAction("w1", "b1", 0, KindUser, "x"), msgAction("w9", "b2", 1, KindUser, "y")), CodeNotFound},
		{"actions not an array", env(TypeActionSubmit, "owner", `{"group_id":"gx","actions":{}}`), CodeInvalidRequest},
		{"non-owner relays", submit("w2", &Context{ContextID: "c1"}, msgAction("w1", "b1", 0, KindUser, "x")), CodeForbidden},
		{"claims another owner", submit("w2", &Context{ContextID: "c1", OwnerID: "w2"}, msgAction("w1", "b1", 0, KindUser, "x")), CodeForbidden},
		{"relays for an owner it is not", submit("w2", &Context{ContextID: "c9", OwnerID: "owner"}, msgAction("w1", "b1", 0, KindUser, "x")), CodeForbidden},
		// Results.
		{"result for unknown action", result("w1", "g1", "zz", IntPtr(0), ResultAccepted), CodeNotFound},
		{"result bad status", result("w1", "g1", "a1", IntPtr(0), "done"), CodeInvalidRequest},
		{"result without ids", result("w1", "", "", IntPtr(0), ResultAccepted), CodeInvalidRequest},
		{"result without index", result("w1", "g1", "a1", nil, ResultAccepted), CodeInvalidRequest},
		{"result wrong index", result("w1", "g1", "a1", IntPtr(3), ResultAccepted), CodeInvalidRequest},
		{"result from non-target", result("w2", "g1", "a1", IntPtr(0), ResultAccepted), CodeForbidden},
		{"result after terminal", result("w1", "g0", "a0", IntPtr(0), ResultAccepted), CodeConflict},
		// Tasks and events.
		{"task.updated without id", env(TypeTaskUpdated, "w1", map[string]string{"status": "running"}), CodeInvalidRequest},
		{"task.updated bad status", env(TypeTaskUpdated, "w1", map[string]string{"task_id": "t1", "status": "sleeping"}), CodeInvalidRequest},
		{"task.done without id", env(TypeTaskDone, "w1", map[string]string{"summary": "x"}), CodeInvalidRequest},
		{"history negative limit", env(TypeEventsHistory, "ui", map[string]int{"limit": -1}), CodeInvalidRequest},
		{"stream follow without connection", env(TypeEventsStream, "ui", map[string]bool{"follow": true}), CodeInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			before := len(history(t, f.b, f.s))
			e := c.env(t, f)
			r := do(t, f.b, e)
			if c.code == "" {
				// Reusing a group id is suppressed as a duplicate, not an error.
				if r.Status != StatusDuplicate {
					t.Fatalf("Handle(%s) status = %q, want %q", c.name, r.Status, StatusDuplicate)
				}
			} else {
				if r.Status != StatusError || r.Error == nil {
					t.Fatalf("Handle(%s) = status %q, want error %s", c.name, r.Status, c.code)
				}
				if r.Error.Code != c.code {
					t.Fatalf("Handle(%s) error = %v, want code %s", c.name, r.Error, c.code)
				}
				if r.Error.Message == "" {
					t.Errorf("Handle(%s) error has no message", c.name)
				}
			}
			if after := len(history(t, f.b, f.s)); after != before {
				t.Errorf("Handle(%s) recorded %d events, want none", c.name, after-before)
			}
		})
	}
}

func TestSessions(t *testing.T) {
	b := newTestBroker(t, Options{})
	a := newSession(t, b, "alpha")
	c := newSession(t, b, "")
	r := mustOK(t, do(t, b, mk(t, TypeSessionList, "ui", "", nil)))
	var list struct {
		Sessions []SessionInfo `json:"sessions"`
	}
	if err := r.Decode(&list); err != nil {
		t.Fatal(err)
	}
	var got [][2]string
	for _, s := range list.Sessions {
		got = append(got, [2]string{s.ID, s.Name + "/" + s.Status})
	}
	want := [][2]string{{a, "alpha/open"}, {c, "/open"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("session.list (-want +got):\n%s", d)
	}

	addAgent(t, b, a, "w1", "")
	mustOK(t, do(t, b, mk(t, TypeActionSubmit, "ui", a, Submit{GroupID: "g", Actions: []Action{msgAction("w1", "x", 0, KindUser, "hi")}})))
	r = mustOK(t, do(t, b, mk(t, TypeSessionClose, "ui", a, nil)))
	if info := decodeAs[SessionInfo](t, r); info.Status != "closed" {
		t.Errorf("session.close status = %q, want closed", info.Status)
	}
	mustOK(t, do(t, b, mk(t, TypeSessionClose, "ui", a, nil))) // closing twice is fine
	evs := history(t, b, a)
	wantTypes := []string{TypeSessionCreated, TypeAgentAdded, TypeActionSubmit, TypeActionResult, TypeSessionClosed}
	if d := cmp.Diff(wantTypes, types(evs)); d != "" {
		t.Fatalf("events of closed session (-want +got):\n%s", d)
	}
	// The unfinished action ended with an error from the bus.
	res := decodeAs[Result](t, evs[3])
	if res.Status != ResultError || evs[3].Src != BusSrc || evs[3].Dst != "ui" {
		t.Errorf("pending action on close = %+v from %s to %s, want error from bus to ui", res, evs[3].Src, evs[3].Dst)
	}
	r = do(t, b, mk(t, TypeMessageCreated, "ui", a, Message{Text: "late"}))
	if r.Error == nil || r.Error.Code != CodeConflict {
		t.Errorf("message.created on closed session = %+v, want conflict", r.Error)
	}
}

func TestAgents(t *testing.T) {
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "")
	addAgent(t, b, s, "w1", "first")
	addAgent(t, b, s, "w2", "")
	r := mustOK(t, do(t, b, mk(t, TypeAgentUpdate, "w1", s, map[string]string{"id": "w1", "name": "renamed"})))
	if d := cmp.Diff(agentPayload{ID: "w1", Name: "renamed"}, decodeAs[agentPayload](t, r)); d != "" {
		t.Errorf("agent.update reply (-want +got):\n%s", d)
	}
	mustOK(t, do(t, b, mk(t, TypeAgentRemove, "ui", s, map[string]string{"id": "w2"})))
	r = mustOK(t, do(t, b, mk(t, TypeAgentList, "ui", s, nil)))
	var list struct {
		Agents []AgentInfo `json:"agents"`
	}
	if err := r.Decode(&list); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]AgentInfo{{ID: "w1", Name: "renamed"}}, list.Agents); d != "" {
		t.Errorf("agent.list (-want +got):\n%s", d)
	}
	evs := history(t, b, s)
	want := []string{TypeSessionCreated, TypeAgentAdded, TypeAgentAdded, TypeAgentUpdated, TypeAgentRemoved}
	if d := cmp.Diff(want, types(evs)); d != "" {
		t.Fatalf("agent events (-want +got):\n%s", d)
	}
	if d := cmp.Diff(agentPayload{ID: "w1", Name: "renamed"}, decodeAs[agentPayload](t, evs[3])); d != "" {
		t.Errorf("agent.updated payload (-want +got):\n%s", d)
	}
	// Re-adding with a new name renames and says so.
	addAgent(t, b, s, "w1", "again")
	evs = history(t, b, s)
	if last := evs[len(evs)-1]; last.Type != TypeAgentUpdated || decodeAs[agentPayload](t, last).Name != "again" {
		t.Errorf("re-add with new name: last event %s %s, want agent.updated to again", last.Type, last.Payload)
	}
}

func TestMessageCreated(t *testing.T) {
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "")
	addAgent(t, b, s, "w1", "worker")
	e := mk(t, TypeMessageCreated, "owner", s, Message{Text: "hello", Kind: KindUser, TaskID: "t1", SenderName: "Boss"})
	e.Dst = "worker" // by display name
	mustOK(t, do(t, b, e))
	evs := history(t, b, s)
	ev := evs[len(evs)-1]
	if ev.Type != TypeMessageCreated || ev.ID != e.ID || ev.Dst != "w1" || ev.Src != "owner" {
		t.Fatalf("message event = %s id=%s dst=%s src=%s, want message.created id=%s dst=w1 src=owner", ev.Type, ev.ID, ev.Dst, ev.Src, e.ID)
	}
	want := Message{Text: "hello", Kind: KindUser, TaskID: "t1", SenderName: "Boss"}
	if d := cmp.Diff(want, decodeAs[Message](t, ev)); d != "" {
		t.Errorf("message payload (-want +got):\n%s", d)
	}
}

func TestActionSubmitSplitsPerTarget(t *testing.T) {
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "")
	addAgent(t, b, s, "owner", "")
	addAgent(t, b, s, "w1", "worker")
	addAgent(t, b, s, "w2", "")
	ctx := &Context{ContextID: "c1", OwnerID: "owner"}
	sub := Submit{GroupID: "g1", Context: ctx, TaskID: "t1", Actions: []Action{
		msgAction("worker", "a0", 0, KindUser, "one"),
		ctlAction("w2", "a1", 1, "new"),
		msgAction("w1", "a2", 2, KindUser, "two"),
	}}
	r := mustOK(t, do(t, b, mk(t, TypeActionSubmit, "owner", s, sub)))
	var rp struct {
		Targets  []string `json:"targets"`
		Rejected []string `json:"rejected"`
	}
	if err := r.Decode(&rp); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"w1", "w2"}, rp.Targets); d != "" {
		t.Errorf("submit targets (-want +got):\n%s", d)
	}
	evs := history(t, b, s)
	evs = evs[len(evs)-2:]
	got := map[string]Submit{}
	for _, ev := range evs {
		if ev.Type != TypeActionSubmit || ev.Src != "owner" {
			t.Fatalf("event %s from %s, want action.submit from owner", ev.Type, ev.Src)
		}
		got[ev.Dst] = decodeAs[Submit](t, ev)
	}
	want := map[string]Submit{
		"w1": {GroupID: "g1", Context: ctx, TaskID: "t1", Actions: []Action{sub.Actions[0], sub.Actions[2]}},
		"w2": {GroupID: "g1", Context: ctx, TaskID: "t1", Actions: []Action{sub.Actions[1]}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("per-target groups (-want +got):\n%s", d)
	}
}

func TestActionResults(t *testing.T) {
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "")
	addAgent(t, b, s, "owner", "")
	addAgent(t, b, s, "w1", "")
	mustOK(t, do(t, b, mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "g", Actions: []Action{
		msgAction("w1", "m", 0, KindUser, "work"), ctlAction("w1", "n", 1, "new")}})))
	steps := []struct {
		res      Result
		terminal bool
		code     string
	}{
		{Result{ActionID: "m", ActionIndex: IntPtr(0), Status: ResultAccepted}, false, ""},
		{Result{ActionID: "m", ActionIndex: IntPtr(0), Status: ResultBlocked}, false, ""},
		{Result{ActionID: "m", ActionIndex: IntPtr(0), Status: ResultCompleted, Detail: "ok"}, true, ""},
		{Result{ActionID: "m", ActionIndex: IntPtr(0), Status: ResultError}, false, CodeConflict},
		{Result{ActionID: "n", ActionIndex: IntPtr(1), Status: ResultCompleted, Data: &ResultData{NewContextID: "c2", NewTaskID: "t2"}}, true, ""},
		{Result{ActionID: "n", ActionIndex: IntPtr(1), Status: ResultRejected}, false, CodeConflict},
	}
	for i, st := range steps {
		st.res.GroupID = "g"
		r := do(t, b, mk(t, TypeActionResult, "w1", s, st.res))
		if st.code != "" {
			if r.Error == nil || r.Error.Code != st.code {
				t.Fatalf("step %d: result %s after terminal = %+v, want %s", i, st.res.Status, r.Error, st.code)
			}
			continue
		}
		mustOK(t, r)
		var rp struct {
			Terminal bool `json:"terminal"`
		}
		if err := r.Decode(&rp); err != nil {
			t.Fatal(err)
		}
		if rp.Terminal != st.terminal {
			t.Errorf("step %d: %s terminal = %v, want %v", i, st.res.Status, rp.Terminal, st.terminal)
		}
		evs := history(t, b, s)
		ev := evs[len(evs)-1]
		if ev.Type != TypeActionResult || ev.Dst != "owner" || ev.Src != "w1" {
			t.Fatalf("step %d: event %s %s->%s, want action.result w1->owner", i, ev.Type, ev.Src, ev.Dst)
		}
		if d := cmp.Diff(st.res, decodeAs[Result](t, ev)); d != "" {
			t.Errorf("step %d: result payload (-want +got):\n%s", i, d)
		}
	}
	// detail and data are left out when empty.
	mustOK(t, do(t, b, mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "h", Actions: []Action{ctlAction("w1", "k", 0, "compact")}})))
	mustOK(t, do(t, b, mk(t, TypeActionResult, "w1", s, `{"group_id":"h","action_id":"k","action_index":0,"status":"completed","detail":"","data":{}}`)))
	evs := history(t, b, s)
	raw := string(evs[len(evs)-1].Payload)
	if strings.Contains(raw, "detail") || strings.Contains(raw, "data") {
		t.Errorf("result payload = %s, want no empty detail or data", raw)
	}
}

func TestIdempotency(t *testing.T) {
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "")
	addAgent(t, b, s, "w1", "")
	sub := Submit{GroupID: "g1", Actions: []Action{msgAction("w1", "a", 0, KindUser, "x")}}
	first := mustOK(t, do(t, b, mk(t, TypeActionSubmit, "owner", s, sub)))
	n := len(history(t, b, s))
	again := mk(t, TypeActionSubmit, "owner", s, sub)
	second := mustOK(t, do(t, b, again))
	if second.Status != StatusDuplicate || second.Corr != again.ID {
		t.Errorf("resubmit = status %q corr %q, want duplicate corr %q", second.Status, second.Corr, again.ID)
	}
	if string(second.Payload) != string(first.Payload) {
		t.Errorf("resubmit payload = %s, want the first reply's %s", second.Payload, first.Payload)
	}
	// An explicit key on any command suppresses its repeat.
	for range 2 {
		e := mk(t, TypeMessageCreated, "owner", s, Message{Text: "once"})
		e.IdempotencyKey = "k1"
		mustOK(t, do(t, b, e))
	}
	// A failed command is not remembered: fixing it and retrying works.
	bad := mk(t, TypeMessageCreated, "owner", s, Message{Text: ""})
	bad.IdempotencyKey = "k2"
	if r := do(t, b, bad); r.Err() == nil {
		t.Fatalf("blank message accepted")
	}
	good := mk(t, TypeMessageCreated, "owner", s, Message{Text: "fixed"})
	good.IdempotencyKey = "k2"
	if r := mustOK(t, do(t, b, good)); r.Status != StatusOK {
		t.Errorf("retry after error status = %q, want ok", r.Status)
	}
	if got := len(history(t, b, s)) - n; got != 2 {
		t.Errorf("events after duplicates = %d, want 2 (one per distinct message)", got)
	}
	// session.create keys are global.
	c1 := mk(t, TypeSessionCreate, "ui", "", nil)
	c1.IdempotencyKey = "new-1"
	c2 := c1
	c2.ID = NewID()
	r1, r2 := mustOK(t, do(t, b, c1)), mustOK(t, do(t, b, c2))
	if r1.Session != r2.Session {
		t.Errorf("session.create twice with one key made %s and %s, want one session", r1.Session, r2.Session)
	}
}

func TestOwnershipAndLoopGuard(t *testing.T) {
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "")
	for _, id := range []string{"owner", "w1", "w2"} {
		addAgent(t, b, s, id, "")
	}
	ctx := &Context{ContextID: "c1"}
	mustOK(t, do(t, b, mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "g1", Context: ctx,
		Actions: []Action{msgAction("w1", "u1", 0, KindUser, "task")}})))
	// A worker cannot relay in the owner's conversation ...
	r := do(t, b, mk(t, TypeActionSubmit, "w1", s, Submit{GroupID: "g2", Context: ctx,
		Actions: []Action{msgAction("w2", "u2", 0, KindUser, "pass it on")}}))
	if r.Error == nil || r.Error.Code != CodeForbidden {
		t.Fatalf("non-owner relay = %+v, want forbidden", r.Error)
	}
	// ... but may reply, and may own a conversation of its own.
	mustOK(t, do(t, b, mk(t, TypeActionSubmit, "w1", s, Submit{GroupID: "g3",
		Actions: []Action{{Type: ActionMessage, Dst: "owner", ActionID: "r1", ActionIndex: IntPtr(0), Kind: KindReply, Text: "done", ReplyToActionID: "u1"}}})))
	mustOK(t, do(t, b, mk(t, TypeActionSubmit, "w1", s, Submit{GroupID: "g4", Context: &Context{ContextID: "c2"},
		Actions: []Action{msgAction("w2", "u3", 0, KindUser, "sub-task")}})))

	// A reply to a reply is not relayed: the bus answers rejected.
	n := len(history(t, b, s))
	r = mustOK(t, do(t, b, mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "g5", Actions: []Action{
		{Type: ActionMessage, Dst: "w1", ActionID: "r2", ActionIndex: IntPtr(0), Kind: KindReply, Text: "thanks", ReplyToActionID: "r1"},
		msgAction("w2", "u4", 1, KindUser, "next"),
	}})))
	var rp struct {
		Targets  []string `json:"targets"`
		Rejected []string `json:"rejected"`
	}
	if err := r.Decode(&rp); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"r2"}, rp.Rejected); d != "" {
		t.Errorf("rejected (-want +got):\n%s", d)
	}
	evs := history(t, b, s)[n:]
	if d := cmp.Diff([]string{TypeActionSubmit, TypeActionResult}, types(evs)); d != "" {
		t.Fatalf("events after loop (-want +got):\n%s", d)
	}
	if evs[0].Dst != "w2" {
		t.Errorf("delivered action went to %s, want w2 only", evs[0].Dst)
	}
	res := decodeAs[Result](t, evs[1])
	if res.ActionID != "r2" || res.Status != ResultRejected || !strings.Contains(res.Detail, "loop guard") {
		t.Errorf("loop guard result = %+v, want r2 rejected by the loop guard", res)
	}
	// The rejected action is terminal.
	r = do(t, b, mk(t, TypeActionResult, "w1", s, Result{GroupID: "g5", ActionID: "r2", ActionIndex: IntPtr(0), Status: ResultAccepted}))
	if r.Error == nil || r.Error.Code != CodeConflict {
		t.Errorf("result for loop-guarded action = %+v, want conflict", r.Error)
	}
}

func TestTaskEvents(t *testing.T) {
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "")
	addAgent(t, b, s, "w1", "")
	for _, st := range []string{TaskStatusRunning, TaskStatusBlocked, TaskStatusReady, TaskStatusDone} {
		mustOK(t, do(t, b, mk(t, TypeTaskUpdated, "w1", s, TaskUpdate{TaskID: "t1", Status: st, ContextID: "c1"})))
	}
	r := mustOK(t, do(t, b, mk(t, TypeTaskDone, "w1", s, TaskDone{TaskID: "t2", Summary: "all good"})))
	if got := decodeAs[map[string]string](t, r)["status"]; got != TaskStatusDone {
		t.Errorf("task.done status = %q, want done", got)
	}
	evs := history(t, b, s)[2:]
	want := []string{TypeTaskUpdated, TypeTaskUpdated, TypeTaskUpdated, TypeTaskUpdated, TypeTaskDone}
	if d := cmp.Diff(want, types(evs)); d != "" {
		t.Fatalf("task events (-want +got):\n%s", d)
	}
	if d := cmp.Diff(TaskDone{TaskID: "t2", Summary: "all good"}, decodeAs[TaskDone](t, evs[4])); d != "" {
		t.Errorf("task.done payload (-want +got):\n%s", d)
	}
}

func TestSeqPerSession(t *testing.T) {
	b := newTestBroker(t, Options{})
	s1, s2 := newSession(t, b, ""), newSession(t, b, "")
	for i := range 5 {
		for _, s := range []string{s1, s2} {
			mustOK(t, do(t, b, mk(t, TypeMessageCreated, "u", s, Message{Text: "m" + string(rune('a'+i))})))
		}
	}
	for _, s := range []string{s1, s2} {
		for i, ev := range history(t, b, s) {
			if ev.Seq != int64(i+1) || ev.Session != s {
				t.Fatalf("event %d of %s has seq %d session %s, want seq %d", i, s, ev.Seq, ev.Session, i+1)
			}
		}
	}
}

func TestHistoryLimits(t *testing.T) {
	bo := bus.DefaultOptions()
	bo.MaxLogMessages = 8
	mb, err := bus.NewMemory(bo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mb.Close() })
	b, err := Open(context.Background(), mb, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s := newSession(t, b, "")
	for range 30 {
		mustOK(t, do(t, b, mk(t, TypeMessageCreated, "u", s, Message{Text: "x"})))
	}
	evs := history(t, b, s)
	if len(evs) != 8 || evs[len(evs)-1].Seq != 31 {
		t.Fatalf("history kept %d events ending at seq %d, want 8 ending at 31", len(evs), evs[len(evs)-1].Seq)
	}
	r := mustOK(t, do(t, b, mk(t, TypeEventsHistory, "u", s, map[string]int{"limit": 3})))
	var p struct {
		Records []Envelope `json:"records"`
	}
	if err := r.Decode(&p); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range p.Records {
		seqs = append(seqs, e.Seq)
	}
	if d := cmp.Diff([]int64{29, 30, 31}, seqs); d != "" {
		t.Errorf("history limit 3 (-want +got):\n%s", d)
	}
}

// TestEventsLiveOnTheBus: each event is a message on the session's
// append-only topic, its seq the offset there, and the session's info and
// agents are retained.
func TestEventsLiveOnTheBus(t *testing.T) {
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "")
	addAgent(t, b, s, "w1", "")
	msg := mustOK(t, do(t, b, mk(t, TypeMessageCreated, "u", s, Message{Text: "x"})))
	var types []string
	var seqs []int64
	err := b.bus.Replay(context.Background(), "session:"+s, 1, func(off uint64, m bus.Message) bool {
		var e Envelope
		if err := json.Unmarshal(m.Payload, &e); err != nil {
			t.Fatal(err)
		}
		types = append(types, e.Type)
		seqs = append(seqs, int64(off))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{TypeSessionCreated, TypeAgentAdded, TypeMessageCreated}, types); d != "" {
		t.Errorf("events on session:%s (-want +got):\n%s", s, d)
	}
	var rec MessageRecorded
	if err := msg.Decode(&rec); err != nil || rec.Seq != seqs[len(seqs)-1] {
		t.Errorf("message.created seq = %d, want its offset %d", rec.Seq, seqs[len(seqs)-1])
	}
	info, ok, err := b.bus.Retained(context.Background(), "session-info:"+s)
	if err != nil || !ok || !strings.Contains(string(info.Payload), `"status":"open"`) {
		t.Errorf("retained session-info:%s = %s, %v, %v; want the open session", s, info.Payload, ok, err)
	}
	agents, ok, err := b.bus.Retained(context.Background(), "session-agents:"+s)
	if err != nil || !ok || !strings.Contains(string(agents.Payload), `"id":"w1"`) {
		t.Errorf("retained session-agents:%s = %s, %v, %v; want w1", s, agents.Payload, ok, err)
	}
}

func TestEnvelopeOmitsEmptyFields(t *testing.T) {
	e := Envelope{V: 1, Type: "x", ID: "i", TS: "2026-01-02T03:04:05.678Z", Src: "s"}
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"type":"x","id":"i","ts":"2026-01-02T03:04:05.678Z","src":"s"}`
	if string(raw) != want {
		t.Errorf("Marshal(minimal envelope) = %s, want %s", raw, want)
	}
	// A null payload from a client is dropped, not echoed as null.
	b := newTestBroker(t, Options{})
	s := newSession(t, b, "")
	r := do(t, b, mk(t, TypeAgentList, "ui", s, "null"))
	mustOK(t, r)
	if ts := FormatTime(b.opts.Now()); len(ts) != len("2026-01-02T03:04:05.678Z") || !strings.HasSuffix(ts, "Z") {
		t.Errorf("FormatTime = %q, want millisecond UTC with Z", ts)
	}
}

func TestFinishedActionsAreForgottenBeyondTheWindow(t *testing.T) {
	b := newTestBroker(t, Options{IdempotencyWindow: 2})
	s := newSession(t, b, "")
	addAgent(t, b, s, "w1", "")
	for i := range 3 {
		g, a := fmt.Sprintf("g%d", i), fmt.Sprintf("a%d", i)
		e := mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: g, Actions: []Action{ctlAction("w1", a, 0, "compact")}})
		e.IdempotencyKey = "k" + g // keep the idempotency window out of the way
		mustOK(t, do(t, b, e))
		mustOK(t, do(t, b, mk(t, TypeActionResult, "w1", s, Result{GroupID: g, ActionID: a, ActionIndex: IntPtr(0), Status: ResultCompleted})))
	}
	// g0/a0 is the oldest of three finished actions: forgotten.
	r := do(t, b, mk(t, TypeActionResult, "w1", s, Result{GroupID: "g0", ActionID: "a0", ActionIndex: IntPtr(0), Status: ResultCompleted}))
	if r.Error == nil || r.Error.Code != CodeNotFound {
		t.Errorf("result for forgotten action = %+v, want not_found", r.Error)
	}
	// g2/a2 is still known: a second result conflicts.
	r = do(t, b, mk(t, TypeActionResult, "w1", s, Result{GroupID: "g2", ActionID: "a2", ActionIndex: IntPtr(0), Status: ResultCompleted}))
	if r.Error == nil || r.Error.Code != CodeConflict {
		t.Errorf("second result for remembered action = %+v, want conflict", r.Error)
	}
	b.mu.Lock()
	n := len(b.sessions[s].actions)
	b.mu.Unlock()
	if n != 2 {
		t.Errorf("remembered actions = %d, want 2", n)
	}
}

func TestOldClosedSessionsAreForgotten(t *testing.T) {
	b := newTestBroker(t, Options{KeepClosed: 2})
	var ids []string
	for range 4 {
		s := newSession(t, b, "")
		mustOK(t, do(t, b, mk(t, TypeSessionClose, "ui", s, nil)))
		ids = append(ids, s)
	}
	open := newSession(t, b, "open")
	var list SessionList
	if err := mustOK(t, do(t, b, mk(t, TypeSessionList, "ui", "", map[string]bool{"all": true}))).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range list.Sessions {
		got = append(got, s.ID)
	}
	if d := cmp.Diff([]string{ids[2], ids[3], open}, got); d != "" {
		t.Errorf("sessions kept (-want +got):\n%s", d)
	}
	if r := do(t, b, mk(t, TypeEventsHistory, "ui", ids[0], nil)); r.Error == nil || r.Error.Code != CodeNotFound {
		t.Errorf("history of a forgotten session = %+v, want not_found", r.Error)
	}
	// Its topics are dropped from the bus too; a kept one's are not.
	for _, id := range []string{ids[0], ids[2]} {
		n := 0
		if err := b.bus.Replay(context.Background(), "session:"+id, 1, func(uint64, bus.Message) bool { n++; return true }); err != nil {
			t.Fatal(err)
		}
		_, kept, _ := b.bus.Retained(context.Background(), "session-info:"+id)
		if want := id == ids[2]; (n > 0) != want || kept != want {
			t.Errorf("session %s: %d events and retained info %v on the bus, want kept = %v", id, n, kept, want)
		}
	}
}
