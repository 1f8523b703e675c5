package envelope

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// got is a compact form of a result for comparison: action_id:status.
func summarize(rs []Result) []string {
	var out []string
	for _, r := range rs {
		s := r.ActionID + ":" + r.Status
		if r.Data != nil {
			s += fmt.Sprintf("(%s,%s)", r.Data.NewContextID, r.Data.NewTaskID)
		}
		out = append(out, s)
	}
	return out
}

func TestReceiver(t *testing.T) {
	type step struct {
		submit  []Action // from "owner"; nil means Finish
		src     string   // overrides the submitter
		want    []string
		running bool
	}
	msg := func(dst, id string) Action { return msgAction(dst, id, 0, KindUser, "work") }
	ctl := func(dst, id, cmd string) Action { return ctlAction(dst, id, 0, cmd) }
	cases := []struct {
		name  string
		steps []step
	}{
		{"message when idle starts a task", []step{
			{submit: []Action{msg("me", "m1")}, want: []string{"m1:accepted"}, running: true},
			{want: []string{"m1:completed"}},
		}},
		{"message while running waits, then starts", []step{
			{submit: []Action{msg("me", "m1"), msg("me", "m2")}, want: []string{"m1:accepted", "m2:queued"}, running: true},
			{want: []string{"m1:completed", "m2:accepted"}, running: true},
			{want: []string{"m2:completed"}},
		}},
		{"interrupt with nothing running is rejected", []step{
			{submit: []Action{ctl("me", "i1", "interrupt")}, want: []string{"i1:rejected"}},
		}},
		{"interrupt stops the running task", []step{
			{submit: []Action{msg("me", "m1")}, want: []string{"m1:accepted"}, running: true},
			{submit: []Action{ctl("me", "i1", "interrupt")}, want: []string{"m1:error", "i1:completed"}},
		}},
		{"interrupt starts the next queued message", []step{
			{submit: []Action{msg("me", "m1"), msg("me", "m2"), ctl("me", "i1", "interrupt")},
				want: []string{"m1:accepted", "m2:queued", "m1:error", "i1:completed", "m2:accepted"}, running: true},
		}},
		{"compact and review: blocked while running, completed when idle", []step{
			{submit: []Action{ctl("me", "c1", "compact"), ctl("me", "r1", "review")}, want: []string{"c1:completed", "r1:completed"}},
			{submit: []Action{msg("me", "m1"), ctl("me", "c2", "compact"), ctl("me", "r2", "review")},
				want: []string{"m1:accepted", "c2:blocked", "r2:blocked"}, running: true},
		}},
		{"new reports new ids when idle, is blocked while running", []step{
			{submit: []Action{ctl("me", "n1", "new")}, want: []string{"n1:completed(id1,id2)"}},
			{submit: []Action{msg("me", "m1"), ctl("me", "n2", "new")}, want: []string{"m1:accepted", "n2:blocked"}, running: true},
		}},
		{"commands ignore case; new_session is new; unknown gets nothing", []step{
			{submit: []Action{ctl("me", "n1", "NEW_SESSION"), ctl("me", "x1", "reboot"), ctl("me", "i1", " Interrupt ")},
				want: []string{"n1:completed(id1,id2)", "i1:rejected"}},
		}},
		{"only its own actions, by id or display name", []step{
			{submit: []Action{msg("other", "o1"), msg("Me Name", "m1")}, want: []string{"m1:accepted"}, running: true},
		}},
		{"ignores its own envelopes", []step{
			{submit: []Action{msg("me", "m1")}, src: "me"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			r := NewReceiver("me", "Me Name", func() string { n++; return fmt.Sprintf("id%d", n) })
			for i, st := range c.steps {
				var got []Result
				if st.submit == nil {
					got = r.Finish("")
				} else {
					src := st.src
					if src == "" {
						src = "owner"
					}
					var err error
					got, err = r.Receive(mk(t, TypeActionSubmit, src, "s", Submit{GroupID: fmt.Sprintf("g%d", i), Actions: st.submit}))
					if err != nil {
						t.Fatal(err)
					}
				}
				if d := cmp.Diff(st.want, summarize(got)); d != "" {
					t.Fatalf("step %d results (-want +got):\n%s", i, d)
				}
				if (r.Current() != nil) != st.running {
					t.Fatalf("step %d: running = %v, want %v", i, r.Current() != nil, st.running)
				}
			}
		})
	}
	// A reply is worked on but may not be relayed; a user message may.
	r := NewReceiver("me", "", nil)
	for _, kind := range []string{KindReply, KindUser} {
		if _, err := r.Receive(mk(t, TypeActionSubmit, "owner", "s", Submit{GroupID: "g" + kind,
			Actions: []Action{msgAction("me", "m-"+kind, 0, kind, "x")}})); err != nil {
			t.Fatal(err)
		}
		if got, want := r.Current().MayRelay, kind == KindUser; got != want {
			t.Errorf("Work for a %s message: MayRelay = %v, want %v", kind, got, want)
		}
		r.Finish("")
	}
	// Envelopes of other types are not actions.
	if got, err := r.Receive(mk(t, TypeMessageCreated, "owner", "s", Message{Text: "hi"})); err != nil || got != nil {
		t.Errorf("Receive(message.created) = %v, %v, want nothing", got, err)
	}
}

// TestInterruptOverTheSocket runs a receiver as a real agent on the socket:
// the owner's control actions come back as the spec's results.
func TestInterruptOverTheSocket(t *testing.T) {
	b := newTestBroker(t, Options{})
	path := serveUnix(t, b)
	owner, worker := dial(t, path), dial(t, path)
	s := mustOK(t, cdo(t, owner, mk(t, TypeSessionCreate, "owner", "", nil))).Session
	mustOK(t, cdo(t, owner, mk(t, TypeAgentAdd, "owner", s, nil)))
	mustOK(t, cdo(t, worker, mk(t, TypeAgentAdd, "w1", s, map[string]string{"id": "w1", "name": "worker"})))

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); worker.Close(); wg.Wait() })
	wg.Go(func() {
		rcv := NewReceiver("w1", "worker", nil)
		for env := range worker.Events() {
			results, err := rcv.Receive(env)
			if err != nil {
				t.Errorf("Receive: %v", err)
				return
			}
			for _, res := range results {
				e, _ := New(TypeActionResult, "w1", res)
				e.Session = s
				if r, err := worker.Do(ctx, e); err != nil || r.Err() != nil {
					if ctx.Err() == nil {
						t.Errorf("send result: %v %v", err, r.Err())
					}
					return
				}
			}
		}
	})

	submit := func(g string, actions ...Action) {
		t.Helper()
		mustOK(t, cdo(t, owner, mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: g, Actions: actions})))
	}
	// expect reads the owner's results until it has one for each action.
	expect := func(want ...string) {
		t.Helper()
		var got []string
		for len(got) < len(want) {
			e := next(t, owner, ofType(TypeActionResult))
			res := decodeAs[Result](t, e)
			got = append(got, res.ActionID+":"+res.Status)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("owner's results (-want +got):\n%s", d)
		}
	}
	submit("g1", ctlAction("worker", "i1", 0, "interrupt"))
	expect("i1:rejected")
	submit("g2", msgAction("w1", "m1", 0, KindUser, "long job"))
	expect("m1:accepted")
	submit("g3", ctlAction("w1", "c1", 0, "compact"))
	expect("c1:blocked")
	submit("g4", ctlAction("w1", "i2", 0, "interrupt"))
	expect("m1:error", "i2:completed")
	submit("g5", ctlAction("w1", "n1", 0, "new"))
	e := next(t, owner, ofType(TypeActionResult))
	if res := decodeAs[Result](t, e); res.Status != ResultCompleted || res.Data == nil || res.Data.NewContextID == "" || res.Data.NewTaskID == "" {
		t.Fatalf("new when idle = %+v, want completed with new ids", res)
	}
}
