package envelope

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestListenUnix(t *testing.T) {
	t.Run("mode 0600 and removed on close", func(t *testing.T) {
		path := sockPath(t)
		l, err := ListenUnix(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("socket mode = %v, want a socket with 0600", fi.Mode())
		}
		l.Close()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("socket still present after Close: %v", err)
		}
	})
	t.Run("stale socket is replaced", func(t *testing.T) {
		path := sockPath(t)
		old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		old.SetUnlinkOnClose(false)
		old.Close() // the file stays, as after a crash
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("stale socket missing: %v", err)
		}
		l, err := ListenUnix(path)
		if err != nil {
			t.Fatalf("ListenUnix over stale socket = %v, want success", err)
		}
		l.Close()
	})
	t.Run("live socket is an error", func(t *testing.T) {
		path := sockPath(t)
		l, err := ListenUnix(path)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		_, err = ListenUnix(path)
		if err == nil || !strings.Contains(err.Error(), "running process") {
			t.Fatalf("ListenUnix over live socket = %v, want an in-use error", err)
		}
	})
	t.Run("regular file is an error", func(t *testing.T) {
		path := sockPath(t)
		if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ListenUnix(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
			t.Fatalf("ListenUnix over a file = %v, want a not-a-socket error", err)
		}
		if data, _ := os.ReadFile(path); string(data) != "keep me" {
			t.Errorf("file was changed to %q", data)
		}
	})
}

// rawConn is a socket client that writes raw lines and reads raw replies.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, path string) *rawConn {
	t.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, r: bufio.NewReaderSize(nc, 1<<20)}
}

func (c *rawConn) write(line string) {
	c.t.Helper()
	if _, err := c.nc.Write([]byte(line)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawConn) read() (Envelope, string) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitLimit))
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	var e Envelope
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		c.t.Fatalf("reply %q is not an envelope: %v", line, err)
	}
	return e, line
}

func TestRawFrames(t *testing.T) {
	b := newTestBroker(t, Options{MaxFrameBytes: 512})
	path := serveUnix(t, b)
	c := dialRaw(t, path)
	ts := FormatTime(time.Now())
	cases := []struct {
		name  string
		frame string
		code  string
		corr  string
	}{
		{"malformed JSON", "{not json\n", CodeInvalidJSON, ""},
		{"truncated JSON", `{"v":1,"type":"session.list"` + "\n", CodeInvalidJSON, ""},
		{"JSON array", "[1,2,3]\n", CodeInvalidRequest, ""},
		{"wrong field type", `{"v":1,"type":"session.list","id":"r1","ts":"` + ts + `","src":"x","seq":"one"}` + "\n", CodeInvalidRequest, "r1"},
		{"oversize line", `{"v":1,"type":"message.created","id":"big","src":"x","payload":{"text":"` + strings.Repeat("a", 2000) + `"}}` + "\n", CodeTooLarge, ""},
		{"unknown type", `{"v":1,"type":"nope","id":"r2","ts":"` + ts + `","src":"x"}` + "\n", CodeUnknownType, "r2"},
		{"missing id", `{"v":1,"type":"session.list","ts":"` + ts + `","src":"x"}` + "\n", CodeInvalidRequest, ""},
		{"missing src", `{"v":1,"type":"session.list","id":"r3","ts":"` + ts + `"}` + "\n", CodeInvalidRequest, "r3"},
		{"missing type", `{"v":1,"id":"r4","ts":"` + ts + `","src":"x"}` + "\n", CodeInvalidRequest, "r4"},
		{"missing v", `{"type":"session.list","id":"r5","ts":"` + ts + `","src":"x"}` + "\n", CodeInvalidRequest, "r5"},
		{"CRLF and trailing garbage", `{"v":1,"type":"session.list","id":"r6","src":"x"} x` + "\r\n", CodeInvalidJSON, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.write(tc.frame)
			e, line := c.read()
			if e.Status != StatusError || e.Error == nil || e.Error.Code != tc.code {
				t.Fatalf("reply to %s = %s, want error %s", tc.name, line, tc.code)
			}
			if e.Corr != tc.corr {
				t.Errorf("reply corr = %q, want %q", e.Corr, tc.corr)
			}
			if e.V != 1 || e.ID == "" || e.TS == "" || e.Src != BusSrc {
				t.Errorf("error reply lacks envelope fields: %s", line)
			}
			if strings.Contains(line, "null") {
				t.Errorf("reply carries a null field: %s", line)
			}
		})
	}
	// The connection survived all of it; blank lines are skipped.
	c.t = t
	c.write("\n   \n" + `{"v":1,"type":"session.create","id":"ok1","ts":"` + ts + `","src":"x"}` + "\r\n")
	e, line := c.read()
	if e.Err() != nil || e.Corr != "ok1" || e.Session == "" {
		t.Fatalf("valid frame after bad ones = %s, want a session.create reply", line)
	}
}

func TestHalfCloseStillGetsReplies(t *testing.T) {
	b := newTestBroker(t, Options{})
	path := serveUnix(t, b)
	c := dialRaw(t, path)
	for i := range 3 {
		c.write(fmt.Sprintf(`{"v":1,"type":"session.create","id":"h%d","src":"x"}`+"\n", i))
	}
	c.nc.(*net.UnixConn).CloseWrite()
	for i := range 3 {
		e, line := c.read()
		if e.Corr != fmt.Sprintf("h%d", i) || e.Err() != nil {
			t.Fatalf("reply %d = %s, want success for h%d", i, line, i)
		}
	}
}

func TestSeqMustIncreasePerConnection(t *testing.T) {
	b := newTestBroker(t, Options{})
	path := serveUnix(t, b)
	c := dial(t, path)
	e := mk(t, TypeSessionList, "x", "", nil)
	e.Seq = 5
	mustOK(t, cdo(t, c, e))
	e = mk(t, TypeSessionList, "x", "", nil)
	e.Seq = 5
	if r := cdo(t, c, e); r.Error == nil || r.Error.Code != CodeInvalidRequest {
		t.Fatalf("repeated seq = %+v, want invalid_request", r.Error)
	}
	// Another connection counts on its own.
	e = mk(t, TypeSessionList, "x", "", nil)
	e.Seq = 1
	mustOK(t, cdo(t, dial(t, path), e))
}

func TestDeliveryToAgents(t *testing.T) {
	b := newTestBroker(t, Options{})
	path := serveUnix(t, b)
	owner, w1, w2 := dial(t, path), dial(t, path), dial(t, path)
	s := mustOK(t, cdo(t, owner, mk(t, TypeSessionCreate, "owner", "", nil))).Session
	for id, c := range map[string]*Client{"owner": owner, "w1": w1, "w2": w2} {
		mustOK(t, cdo(t, c, mk(t, TypeAgentAdd, id, s, map[string]string{"id": id, "name": "n-" + id})))
	}
	// A broadcast reaches everyone but its sender.
	mustOK(t, cdo(t, owner, mk(t, TypeMessageCreated, "owner", s, Message{Text: "all hands"})))
	for name, c := range map[string]*Client{"w1": w1, "w2": w2} {
		got := next(t, c, ofType(TypeMessageCreated))
		if got.Src != "owner" || got.Dst != "" {
			t.Errorf("%s got message %s->%s, want broadcast from owner", name, got.Src, got.Dst)
		}
	}
	// An action reaches only its target, and its result only the submitter.
	mustOK(t, cdo(t, owner, mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: "g",
		Actions: []Action{msgAction("n-w2", "a", 0, KindUser, "for w2")}})))
	got := next(t, w2, ofType(TypeActionSubmit))
	if got.Dst != "w2" {
		t.Errorf("w2 got action for %s", got.Dst)
	}
	mustOK(t, cdo(t, w2, mk(t, TypeActionResult, "w2", s, Result{GroupID: "g", ActionID: "a", ActionIndex: IntPtr(0), Status: ResultCompleted})))
	res := next(t, owner, ofType(TypeActionResult))
	if r := decodeAs[Result](t, res); r.ActionID != "a" || r.Status != ResultCompleted {
		t.Errorf("owner got result %+v, want a completed", r)
	}
	// w1 saw neither the action nor the result: its next event is the
	// message sent after them.
	mustOK(t, cdo(t, owner, mk(t, TypeMessageCreated, "owner", s, Message{Text: "marker"})))
	for {
		e := next(t, w1, func(Envelope) bool { return true })
		if e.Type == TypeActionSubmit || e.Type == TypeActionResult {
			t.Fatalf("w1 received %s addressed to %s", e.Type, e.Dst)
		}
		if e.Type == TypeMessageCreated && strings.Contains(string(e.Payload), "marker") {
			break
		}
	}
}

func TestOfflineActionsArriveOnRejoin(t *testing.T) {
	b := newTestBroker(t, Options{})
	path := serveUnix(t, b)
	owner := dial(t, path)
	s := mustOK(t, cdo(t, owner, mk(t, TypeSessionCreate, "owner", "", nil))).Session
	mustOK(t, cdo(t, owner, mk(t, TypeAgentAdd, "owner", s, nil)))
	w := dial(t, path)
	mustOK(t, cdo(t, w, mk(t, TypeAgentAdd, "w1", s, nil)))
	w.Close()
	// Sent while w1 is gone (or going: a push into a dying connection is
	// not a delivery either).
	for i := range 3 {
		mustOK(t, cdo(t, owner, mk(t, TypeActionSubmit, "owner", s, Submit{GroupID: fmt.Sprintf("g%d", i),
			Actions: []Action{msgAction("w1", fmt.Sprintf("a%d", i), 0, KindUser, "queued")}})))
	}
	w = dial(t, path)
	r := mustOK(t, cdo(t, w, mk(t, TypeAgentAdd, "w1", s, nil)))
	if !decodeAs[map[string]any](t, r)["rejoined"].(bool) {
		t.Errorf("agent.add after reconnect: rejoined = false")
	}
	for i := range 3 {
		e := next(t, w, ofType(TypeActionSubmit))
		if g := decodeAs[Submit](t, e).GroupID; g != fmt.Sprintf("g%d", i) {
			t.Fatalf("redelivered group %d = %s, want g%d", i, g, i)
		}
	}
}

// TestOrderPerTargetUnderConcurrentSubmits has several submitters race
// actions to two targets; each target must see exactly the log's order, and
// each submitter's actions in the order it sent them.
func TestOrderPerTargetUnderConcurrentSubmits(t *testing.T) {
	b := newTestBroker(t, Options{})
	path := serveUnix(t, b)
	const submitters, perSubmitter = 4, 50
	admin := dial(t, path)
	s := mustOK(t, cdo(t, admin, mk(t, TypeSessionCreate, "admin", "", nil))).Session
	targets := map[string]*Client{"t1": dial(t, path), "t2": dial(t, path)}
	for id, c := range targets {
		mustOK(t, cdo(t, c, mk(t, TypeAgentAdd, id, s, nil)))
	}
	var wg sync.WaitGroup
	for i := range submitters {
		c := dial(t, path)
		src := fmt.Sprintf("s%d", i)
		wg.Go(func() {
			for k := range perSubmitter {
				// Pipelined: Send does not wait for replies.
				_, err := c.Send(mk(t, TypeActionSubmit, src, s, Submit{GroupID: fmt.Sprintf("%s-%d", src, k), Actions: []Action{
					msgAction("t1", fmt.Sprintf("%s-%d-1", src, k), 0, KindUser, "x"),
					msgAction("t2", fmt.Sprintf("%s-%d-2", src, k), 1, KindUser, "y"),
				}}))
				if err != nil {
					t.Errorf("send: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	received := map[string][]string{}
	for id, c := range targets {
		for range submitters * perSubmitter {
			e := next(t, c, ofType(TypeActionSubmit))
			received[id] = append(received[id], decodeAs[Submit](t, e).Actions[0].ActionID)
		}
	}
	logged := map[string][]string{}
	for _, e := range history(t, b, s) {
		if e.Type == TypeActionSubmit {
			logged[e.Dst] = append(logged[e.Dst], decodeAs[Submit](t, e).Actions[0].ActionID)
		}
	}
	if d := cmp.Diff(logged, received); d != "" {
		t.Fatalf("targets saw a different order than the log (-log +received):\n%s", d)
	}
	for id, ids := range received {
		last := map[string]int{}
		for _, aid := range ids {
			var src string
			var k, n int
			fmt.Sscanf(strings.ReplaceAll(aid, "-", " "), "%s %d %d", &src, &k, &n)
			if prev, ok := last[src]; ok && k <= prev {
				t.Fatalf("%s saw %s after %s-%d: out of order", id, aid, src, prev)
			}
			last[src] = k
		}
		if len(last) != submitters {
			t.Errorf("%s heard from %d submitters, want %d", id, len(last), submitters)
		}
	}
}

func TestSlowConsumerIsDisconnected(t *testing.T) {
	b := newTestBroker(t, Options{QueueLen: 4})
	path := serveUnix(t, b)
	slow := dialRaw(t, path)
	s := newSession(t, b, "")
	slow.write(fmt.Sprintf(`{"v":1,"type":"agent.add","id":"j","src":"slow","session":%q}`+"\n", s))
	if e, line := slow.read(); e.Err() != nil {
		t.Fatalf("agent.add = %s", line)
	}
	// slow never reads again; big messages fill the socket, then its queue.
	text := strings.Repeat("z", 64<<10)
	for i := 0; ; i++ {
		mustOK(t, do(t, b, mk(t, TypeMessageCreated, "u", s, Message{Text: text})))
		var list struct{ Agents []AgentInfo }
		if err := mustOK(t, do(t, b, mk(t, TypeAgentList, "u", s, nil))).Decode(&list); err != nil {
			t.Fatal(err)
		}
		if list.Agents[0].Status == "" {
			break // the broker let go of it
		}
		if i > 10000 {
			t.Fatalf("slow consumer never disconnected")
		}
	}
	// The publisher kept going and the slow connection is closed.
	slow.nc.SetReadDeadline(time.Now().Add(waitLimit))
	buf := make([]byte, 1<<20)
	for {
		if _, err := slow.nc.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("slow connection still open")
			}
			break
		}
	}
}

func TestServeStopsOnCancel(t *testing.T) {
	b := newTestBroker(t, Options{})
	path := sockPath(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	l, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- b.Serve(ctx, l) }()
	c := dial(t, path)
	mustOK(t, cdo(t, c, mk(t, TypeSessionList, "x", "", nil)))
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("Serve did not return")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	if _, err := c.Do(context.Background(), mk(t, TypeSessionList, "x", "", nil)); err == nil {
		t.Errorf("Do after shutdown succeeded")
	}
}

func TestResendingTheSameEnvelopeIsADuplicate(t *testing.T) {
	b := newTestBroker(t, Options{})
	path := serveUnix(t, b)
	c := dial(t, path)
	s := mustOK(t, cdo(t, c, mk(t, TypeSessionCreate, "x", "", nil))).Session
	mustOK(t, cdo(t, c, mk(t, TypeAgentAdd, "w1", s, nil)))
	e := mk(t, TypeActionSubmit, "x", s, Submit{GroupID: "g", Actions: []Action{msgAction("w1", "a", 0, KindUser, "x")}})
	e.Seq = 10
	mustOK(t, cdo(t, c, e))
	// A client that lost the reply sends the same bytes again.
	if r := cdo(t, c, e); r.Status != StatusDuplicate {
		t.Fatalf("resent envelope status = %q (%v), want duplicate", r.Status, r.Err())
	}
}

func TestPipelinedLinesGetOrderedReplies(t *testing.T) {
	b := newTestBroker(t, Options{QueueLen: 8})
	path := serveUnix(t, b)
	c := dialRaw(t, path)
	const n = 500
	var frames strings.Builder
	for i := range n {
		fmt.Fprintf(&frames, `{"v":1,"type":"session.list","id":"p%d","src":"x","seq":%d}`+"\n", i, i+1)
	}
	go c.nc.Write([]byte(frames.String())) // the reply stream is read below
	for i := range n {
		e, line := c.read()
		if e.Corr != fmt.Sprintf("p%d", i) || e.Err() != nil {
			t.Fatalf("reply %d = %s, want success for p%d", i, line, i)
		}
	}
}

func TestServeEndsConnectionsWhenTheListenerFails(t *testing.T) {
	b := newTestBroker(t, Options{})
	path := sockPath(t)
	l, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Serve(context.Background(), l) }()
	c := dial(t, path)
	mustOK(t, cdo(t, c, mk(t, TypeSessionList, "x", "", nil)))
	l.Close() // not a shutdown: Serve reports it
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("Serve = nil after the listener failed, want an error")
		}
	case <-time.After(waitLimit):
		t.Fatalf("Serve did not return")
	}
	if _, err := c.Do(context.Background(), mk(t, TypeSessionList, "x", "", nil)); err == nil {
		t.Errorf("connection still served after Serve returned")
	}
}
