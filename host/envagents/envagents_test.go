package envagents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/envelope"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/envagents"
	"github.com/weavehq/weave/host/model/modeltest"
)

// waitLimit guards every wait: a wait that reaches it is a failure.
const waitLimit = 60 * time.Second

// world is a broker on a Unix socket and an HTTP face, a host whose
// model is the fake srv, and Loom joined to session.
type world struct {
	srv     *modeltest.Server
	sock    string
	httpURL string
	session string
}

func newWorld(t *testing.T, turns ...modeltest.Turn) *world {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv := modeltest.NewServer(t, turns...)
	cfg := config.Default()
	cfg.Model.Provider, cfg.Model.Name, cfg.Model.BaseURL, cfg.Model.APIKeyEnv = "openai", "fake-model", srv.OpenAIURL(), "FAKE_KEY"
	getenv := func(k string) string {
		if k == "FAKE_KEY" {
			return "k"
		}
		return ""
	}
	h, err := host.Open(ctx, t.TempDir(), cfg, host.WithTools(), host.WithEnv(getenv))
	if err != nil {
		t.Fatalf("host.Open = %v", err)
	}
	b := envelope.NewBroker(envelope.Options{})
	dir, err := os.MkdirTemp("", "envag")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "bus.sock")
	l, err := envelope.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve(ctx, l) }()
	hs := httptest.NewServer(b.Handler())

	w := &world{srv: srv, sock: sock, httpURL: hs.URL}
	// The session is made by a client of its own, as a TUI would.
	c, err := envelope.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	rep := do(t, c, envelope.TypeSessionCreate, "user", "", "", map[string]string{"name": "s"})
	var info envelope.SessionInfo
	if err := rep.Decode(&info); err != nil {
		t.Fatal(err)
	}
	w.session = info.ID
	c.Close()

	ready := make(chan struct{})
	joined := make(chan error, 1)
	go func() { joined <- envagents.Join(ctx, sock, w.session, "Loom", h, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-joined:
		t.Fatalf("Join = %v before joining", err)
	case <-time.After(waitLimit):
		t.Fatal("Loom did not join")
	}
	t.Cleanup(func() {
		cancel()
		hs.Close()
		<-joined
		<-served
		_ = h.Close(context.Background())
		os.RemoveAll(dir)
	})
	return w
}

func do(t *testing.T, c *envelope.Client, typ, src, session, dst string, payload any) envelope.Envelope {
	t.Helper()
	env, err := envelope.New(typ, src, payload)
	if err != nil {
		t.Fatal(err)
	}
	env.Session, env.Dst = session, dst
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	rep, err := c.Do(ctx, env)
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	if err := rep.Err(); err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	return rep
}

func userAction(id, text string) envelope.Submit {
	return envelope.Submit{GroupID: "g-" + id, Context: &envelope.Context{ContextID: "conv-1"}, Actions: []envelope.Action{{
		Type: envelope.ActionMessage, Kind: envelope.KindUser, Dst: "loom", ActionID: id, ActionIndex: envelope.IntPtr(0), Text: text}}}
}

func controlAction(id, command string) envelope.Submit {
	return envelope.Submit{GroupID: "g-" + id, Context: &envelope.Context{ContextID: "conv-1"}, Actions: []envelope.Action{{
		Type: envelope.ActionControl, Kind: envelope.KindControl, Dst: "loom", ActionID: id, ActionIndex: envelope.IntPtr(0), Command: command}}}
}

// socketUser is a client on the Unix socket that joined the session as
// "user".
type socketUser struct {
	t       *testing.T
	c       *envelope.Client
	session string
	seen    []envelope.Envelope
}

func newSocketUser(t *testing.T, w *world) *socketUser {
	c, err := envelope.Dial(context.Background(), w.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	u := &socketUser{t: t, c: c, session: w.session}
	_ = c.Events()
	do(t, c, envelope.TypeAgentAdd, "user", w.session, "", map[string]string{"id": "user", "name": "user"})
	return u
}

func (u *socketUser) submit(p envelope.Submit) {
	do(u.t, u.c, envelope.TypeActionSubmit, "user", u.session, "", p)
}

// until reads pushed frames until one matches.
func (u *socketUser) until(what string, match func(envelope.Envelope) bool) envelope.Envelope {
	u.t.Helper()
	for _, ev := range u.seen {
		if match(ev) {
			return ev
		}
	}
	timeout := time.After(waitLimit)
	for {
		select {
		case ev, ok := <-u.c.Events():
			if !ok {
				u.t.Fatalf("connection closed waiting for %s", what)
			}
			u.seen = append(u.seen, ev)
			if match(ev) {
				return ev
			}
		case <-timeout:
			u.t.Fatalf("no %s within %s; saw %s", what, waitLimit, frames(u.seen))
		}
	}
}

func frames(evs []envelope.Envelope) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  %s %s->%s %s", ev.Type, ev.Src, ev.Dst, ev.Payload)
	}
	return b.String()
}

// replyTo matches Loom's reply action to action id.
func replyTo(id string) func(envelope.Envelope) bool {
	return func(ev envelope.Envelope) bool {
		if ev.Type != envelope.TypeActionSubmit || ev.Src != "loom" {
			return false
		}
		var p envelope.Submit
		return ev.Decode(&p) == nil && len(p.Actions) == 1 && p.Actions[0].Kind == envelope.KindReply && p.Actions[0].ReplyToActionID == id
	}
}

// resultOf matches the result of action id with status.
func resultOf(id, status string) func(envelope.Envelope) bool {
	return func(ev envelope.Envelope) bool {
		if ev.Type != envelope.TypeActionResult {
			return false
		}
		var r envelope.Result
		return ev.Decode(&r) == nil && r.ActionID == id && r.Status == status
	}
}

func replyText(t *testing.T, ev envelope.Envelope) string {
	var p envelope.Submit
	if err := ev.Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p.Actions[0].Text
}

func TestLoomAnswersInASessionOverTheSocket(t *testing.T) {
	w := newWorld(t, modeltest.Turn{Agent: "loom", Text: "Hello from Loom."})
	u := newSocketUser(t, w)
	u.submit(userAction("a1", "Say hello."))
	u.until("accepted", resultOf("a1", envelope.ResultAccepted))
	if got := replyText(t, u.until("Loom's reply", replyTo("a1"))); got != "Hello from Loom." {
		t.Fatalf("reply = %q, want Loom's answer", got)
	}
	u.until("completed", resultOf("a1", envelope.ResultCompleted))
	if reqs := w.srv.Requests(); len(reqs) != 1 || !bytes.Contains(reqs[0].Body, []byte("Say hello.")) {
		t.Fatalf("model requests = %d, want one carrying the user's text", len(reqs))
	}
}

func TestLoomAnswersInASessionOverHTTP(t *testing.T) {
	w := newWorld(t, modeltest.Turn{Agent: "loom", Text: "Hello over HTTP."})
	post := func(typ string, payload any) {
		env, err := envelope.New(typ, "user", payload)
		if err != nil {
			t.Fatal(err)
		}
		env.Session = w.session
		body, _ := json.Marshal(env)
		resp, err := http.Post(w.httpURL+"/v1/envelopes", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rep envelope.Envelope
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || rep.Err() != nil {
			t.Fatalf("%s over HTTP: %v %v", typ, err, rep.Err())
		}
	}
	post(envelope.TypeAgentAdd, map[string]string{"id": "user", "name": "user"})
	post(envelope.TypeActionSubmit, userAction("h1", "Say hello."))

	// The answer arrives on the session's event stream (SSE), filtered to
	// what is routed to the user.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.httpURL+"/v1/sessions/"+w.session+"/events?agent=user&after=0", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := newSSE(resp)
	var seen []envelope.Envelope
	replied := false
	for {
		ev, err := dec()
		if err != nil {
			t.Fatalf("event stream ended (%v) before Loom finished; saw %s", err, frames(seen))
		}
		seen = append(seen, ev)
		if replyTo("h1")(ev) {
			if got := replyText(t, ev); got != "Hello over HTTP." {
				t.Fatalf("reply = %q", got)
			}
			replied = true
		}
		if resultOf("h1", envelope.ResultCompleted)(ev) {
			break
		}
	}
	if !replied {
		t.Fatalf("completed without a reply; saw %s", frames(seen))
	}
}

// newSSE reads "data:" lines of an SSE response as envelopes.
func newSSE(resp *http.Response) func() (envelope.Envelope, error) {
	buf := make([]byte, 0, 64<<10)
	tmp := make([]byte, 4096)
	return func() (envelope.Envelope, error) {
		for {
			if i := bytes.Index(buf, []byte("\n\n")); i >= 0 {
				block := buf[:i]
				buf = buf[i+2:]
				for _, line := range bytes.Split(block, []byte("\n")) {
					if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
						var ev envelope.Envelope
						if err := json.Unmarshal(bytes.TrimSpace(d), &ev); err != nil {
							return ev, err
						}
						return ev, nil
					}
				}
				continue
			}
			n, err := resp.Body.Read(tmp)
			buf = append(buf, tmp[:n]...)
			if err != nil && n == 0 {
				return envelope.Envelope{}, err
			}
		}
	}
}

func TestInterruptCancelsLoomsTurn(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	w := newWorld(t, modeltest.Turn{Agent: "loom", Text: "Thinking hard about it", Hold: hold})
	u := newSocketUser(t, w)
	u.submit(userAction("a1", "Think."))
	u.until("accepted", resultOf("a1", envelope.ResultAccepted))
	// The turn is held open at the model: interrupt it.
	u.submit(controlAction("c1", envelope.CommandInterrupt))
	u.until("the interrupt's result", resultOf("c1", envelope.ResultCompleted))
	ev := u.until("the turn's end", resultOf("a1", envelope.ResultError))
	var r envelope.Result
	_ = ev.Decode(&r)
	if r.Detail != "interrupted" {
		t.Fatalf("turn ended %q, want interrupted", r.Detail)
	}
}

func TestNewStartsAFreshConversation(t *testing.T) {
	w := newWorld(t, modeltest.Turn{Agent: "loom", Text: "first answer"}, modeltest.Turn{Agent: "loom", Text: "second answer"},
		modeltest.Turn{Agent: "loom", Text: "third answer"})
	u := newSocketUser(t, w)
	u.submit(userAction("a1", "remember the word PELICAN"))
	u.until("completed", resultOf("a1", envelope.ResultCompleted))
	u.submit(userAction("a2", "what was the word?"))
	u.until("completed", resultOf("a2", envelope.ResultCompleted))
	if reqs := w.srv.Requests(); !bytes.Contains(reqs[len(reqs)-1].Body, []byte("PELICAN")) {
		t.Fatal("a follow-up should carry the conversation so far")
	}
	u.submit(controlAction("n1", envelope.CommandNew))
	ev := u.until("new's result", resultOf("n1", envelope.ResultCompleted))
	var r envelope.Result
	if err := ev.Decode(&r); err != nil || r.Data == nil || r.Data.NewContextID == "" {
		t.Fatalf("new's result = %s, want data.new_context_id", ev.Payload)
	}
	u.submit(userAction("a3", "start over"))
	u.until("completed", resultOf("a3", envelope.ResultCompleted))
	reqs := w.srv.Requests()
	last := reqs[len(reqs)-1].Body
	if bytes.Contains(last, []byte("PELICAN")) || bytes.Contains(last, []byte("first answer")) {
		t.Fatalf("after new the model still got the earlier conversation: %s", last)
	}
}

func TestCompactCompactsLoomsConversation(t *testing.T) {
	w := newWorld(t, modeltest.Turn{Agent: "loom", Text: "an answer to compact"},
		modeltest.Turn{Text: "SUMMARY-OF-IT", Default: true})
	u := newSocketUser(t, w)
	u.submit(userAction("a1", "do a thing"))
	u.until("completed", resultOf("a1", envelope.ResultCompleted))
	before := len(w.srv.Requests())
	u.submit(controlAction("k1", envelope.CommandCompact))
	u.until("compact's result", resultOf("k1", envelope.ResultCompleted))
	if len(w.srv.Requests()) == before {
		t.Fatal("compact asked the model for no summary")
	}
	u.submit(userAction("a2", "go on"))
	u.until("completed", resultOf("a2", envelope.ResultCompleted))
	reqs := w.srv.Requests()
	if last := reqs[len(reqs)-1].Body; !bytes.Contains(last, []byte("SUMMARY-OF-IT")) {
		t.Fatalf("the turn after compact does not carry the summary: %s", last)
	}
}

func TestReviewAsksWeft(t *testing.T) {
	w := newWorld(t, modeltest.Turn{Agent: "weft", Text: "Weft says: looks fine."})
	u := newSocketUser(t, w)
	sub := controlAction("r1", envelope.CommandReview)
	sub.Actions[0].Args = "check the tests"
	u.submit(sub)
	if got := replyText(t, u.until("Weft's review", replyTo("r1"))); got != "Weft says: looks fine." {
		t.Fatalf("review reply = %q", got)
	}
	u.until("completed", resultOf("r1", envelope.ResultCompleted))
	reqs := w.srv.Requests()
	if len(reqs) != 1 || !bytes.Contains(reqs[0].Body, []byte("check the tests")) {
		t.Fatalf("Weft was not asked with the review's args")
	}
}

// TestLoomRelaysToAnotherAgent: Loom's answer in the source document's
// relay output reaches the named agent as a relay, that agent's reply is
// Loom's next turn, and Loom's task_done ends the relay and answers the
// user.
func TestLoomRelaysToAnotherAgent(t *testing.T) {
	w := newWorld(t,
		modeltest.Turn{Agent: "loom", Text: `{"type":"relay_actions","actions":[{"type":"message","dst":"worker","text":"count the files"}]}`},
		modeltest.Turn{Agent: "loom", AfterTool: "", Match: "worker replied", Text: `{"type":"task_done","summary":"There are 3 files."}`})
	u := newSocketUser(t, w)
	worker, err := envelope.Dial(context.Background(), w.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	wu := &socketUser{t: t, c: worker, session: w.session}
	_ = worker.Events()
	do(t, worker, envelope.TypeAgentAdd, "worker", w.session, "", map[string]string{"id": "worker", "name": "worker"})

	u.submit(userAction("a1", "How many files?"))
	got := wu.until("Loom's relayed action", func(ev envelope.Envelope) bool {
		return ev.Type == envelope.TypeActionSubmit && ev.Src == "loom" && ev.Dst == "worker"
	})
	var p envelope.Submit
	if err := got.Decode(&p); err != nil || len(p.Actions) != 1 || p.Actions[0].Text != "count the files" || p.Actions[0].RelayID == "" {
		t.Fatalf("relayed action = %s, want Loom's message with its relay_id", got.Payload)
	}
	reply := envelope.Submit{GroupID: "g-w1", Context: p.Context, Actions: []envelope.Action{{Type: envelope.ActionMessage, Kind: envelope.KindReply,
		Dst: "loom", ActionID: "w1", ActionIndex: envelope.IntPtr(0), Text: "3 files", ReplyToActionID: p.Actions[0].ActionID}}}
	do(t, worker, envelope.TypeActionSubmit, "worker", w.session, "", reply)
	if got := replyText(t, u.until("Loom's answer", replyTo("a1"))); got != "There are 3 files." {
		t.Fatalf("answer = %q, want task_done's summary", got)
	}
	// The relay's end is in the session's log, whoever it was routed to.
	var recs envelope.Records
	if err := do(t, u.c, envelope.TypeEventsHistory, "user", w.session, "", map[string]int{"limit": 1000}).Decode(&recs); err != nil {
		t.Fatal(err)
	}
	ended := false
	for _, ev := range recs.Records {
		var d envelope.RelayDone
		if ev.Type == envelope.TypeRelayDone && ev.Decode(&d) == nil && d.RelayID == p.Actions[0].RelayID && d.Summary == "There are 3 files." {
			ended = true
		}
	}
	if !ended {
		t.Fatalf("no relay.done for relay %s in the log: %s", p.Actions[0].RelayID, frames(recs.Records))
	}
	reqs := w.srv.Requests()
	if !bytes.Contains(reqs[len(reqs)-1].Body, []byte("3 files")) {
		t.Fatal("the worker's reply did not reach Loom's model")
	}
}

// TestOnlyTheOwnerControlsLoomsConversation: a peer in the session tries to
// interrupt a conversation with Loom it did not start, with the
// conversation's context and without one; the turn lives on.
func TestOnlyTheOwnerControlsLoomsConversation(t *testing.T) {
	hold := make(chan struct{})
	w := newWorld(t, modeltest.Turn{Agent: "loom", Text: "a long answer", Hold: hold})
	u := newSocketUser(t, w)
	u.submit(userAction("a1", "Think."))
	u.until("accepted", resultOf("a1", envelope.ResultAccepted))

	ic, err := envelope.Dial(context.Background(), w.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	intruder := &socketUser{t: t, c: ic, session: w.session}
	_ = ic.Events()
	do(t, ic, envelope.TypeAgentAdd, "intruder", w.session, "", map[string]string{"id": "intruder"})

	// With the owner's context: the bus refuses it.
	env, _ := envelope.New(envelope.TypeActionSubmit, "intruder", controlAction("x1", envelope.CommandInterrupt))
	env.Session = w.session
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	rep, err := ic.Do(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := rep.Err().(*envelope.Error); !ok || e.Code != envelope.CodeForbidden {
		t.Fatalf("an intruder's interrupt in the owner's conversation = %v, want forbidden", rep.Err())
	}
	// Without a context it is the intruder's own conversation, where no
	// turn runs.
	own := controlAction("x2", envelope.CommandInterrupt)
	own.Context = nil
	do(t, ic, envelope.TypeActionSubmit, "intruder", w.session, "", own)
	intruder.until("the intruder's interrupt rejected", resultOf("x2", envelope.ResultRejected))

	close(hold)
	if got := replyText(t, u.until("Loom's answer", replyTo("a1"))); got != "a long answer" {
		t.Fatalf("answer = %q, want the held turn's", got)
	}
	u.until("completed", resultOf("a1", envelope.ResultCompleted))
}

// TestConversationsAreBounded: a peer opening conversation after
// conversation with Loom is refused past MaxConversations, and the
// conversations already open still work.
func TestConversationsAreBounded(t *testing.T) {
	w := newWorld(t, modeltest.Turn{Agent: "loom", Text: "still here"})
	u := newSocketUser(t, w)
	for i := range envagents.MaxConversations + 1 {
		sub := controlAction(fmt.Sprintf("b%d", i), "bogus")
		sub.Context = &envelope.Context{ContextID: fmt.Sprintf("ctx-%d", i)}
		u.submit(sub)
	}
	last := fmt.Sprintf("b%d", envagents.MaxConversations)
	ev := u.until("the refusal", resultOf(last, envelope.ResultRejected))
	var r envelope.Result
	_ = ev.Decode(&r)
	if !strings.Contains(r.Detail, "conversations") {
		t.Fatalf("conversation %d: %s, want refused for the bound", envagents.MaxConversations+1, r.Detail)
	}
	sub := userAction("a1", "hello again")
	sub.Context = &envelope.Context{ContextID: "ctx-0"}
	u.submit(sub)
	if got := replyText(t, u.until("Loom's answer", replyTo("a1"))); got != "still here" {
		t.Fatalf("answer = %q", got)
	}
}
