package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/envelope"
)

// serveOnNATS runs `weave bus serve --uds` in this process on the nats bus
// at url; stop ends it as Ctrl-C would.
func serveOnNATS(t *testing.T, url, sock string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lines{ch: make(chan string, 16)}
	var errOut strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- runBus(ctx, &Streams{In: strings.NewReader(""), Out: out, ErrOut: &lockedWriter{w: &errOut}},
			"--dir", t.TempDir(), "bus", "serve", "--uds", sock)
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if code := bustest.Recv(t, "bus serve to stop", done); code != exitOK {
			t.Errorf("bus serve exited %d after Ctrl-C, want 0", code)
		}
	}
	t.Cleanup(stop)
	for {
		select {
		case line := <-out.ch:
			if strings.HasPrefix(line, "uds") {
				return stop
			}
		case code := <-done:
			stopped = true
			t.Fatalf("bus serve on %s exited %d before listening: %s", url, code, errOut.String())
		}
	}
}

// TestBusServeTwoServersOnNATS: two `weave bus serve` on one nats bus
// serve the same sessions, and an agent whose server goes away finds every
// event on the other one.
func TestBusServeTwoServersOnNATS(t *testing.T) {
	url := bustest.StartNATS(t).URL()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("WEAVE_BUS_URL", url)
	t.Setenv("WEAVE_BUS_TOKEN", "")
	dir := t.TempDir()
	s1, s2 := dir+"/one.sock", dir+"/two.sock"
	serveOnNATS(t, url, s1)
	stop2 := serveOnNATS(t, url, s2)
	checkTwoServers(t, s1, s2, stop2)
}

// checkTwoServers drives the exchange against servers on sockets s1 and
// s2; kill2 makes the second one go away.
func checkTwoServers(t *testing.T, s1, s2 string, kill2 func()) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func(path string) *envelope.Client {
		c, err := envelope.Dial(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	do := func(c *envelope.Client, typ, src, sess string, payload any) envelope.Envelope {
		t.Helper()
		env, err := envelope.New(typ, src, payload)
		if err != nil {
			t.Fatal(err)
		}
		env.Session = sess
		r, err := c.Do(ctx, env)
		if err == nil {
			err = r.Err()
		}
		if err != nil {
			t.Fatalf("%s from %s: %v", typ, src, err)
		}
		return r
	}
	submit := func(c *envelope.Client, sess, id, text string) {
		t.Helper()
		do(c, envelope.TypeActionSubmit, "agent-a", sess, envelope.Submit{GroupID: "g-" + id,
			Actions: []envelope.Action{{Type: envelope.ActionMessage, Kind: envelope.KindUser, Dst: "agent-b", ActionID: id, ActionIndex: envelope.IntPtr(0), Text: text}}})
	}
	// actionIDs reads action.submit events for agent-b until it has n.
	actionIDs := func(c *envelope.Client, n int) []string {
		t.Helper()
		var ids []string
		for len(ids) < n {
			select {
			case ev, ok := <-c.Events():
				if !ok {
					t.Fatalf("connection closed after %v", ids)
				}
				if ev.Type != envelope.TypeActionSubmit {
					continue
				}
				var p envelope.Submit
				if err := ev.Decode(&p); err != nil {
					t.Fatal(err)
				}
				for _, a := range p.Actions {
					ids = append(ids, a.ActionID)
				}
			case <-ctx.Done():
				t.Fatalf("got actions %v, want %d", ids, n)
			}
		}
		return ids
	}

	a := dial(s1)
	var info envelope.SessionInfo
	if err := do(a, envelope.TypeSessionCreate, "agent-a", "", map[string]string{"name": "shared"}).Decode(&info); err != nil {
		t.Fatal(err)
	}
	do(a, envelope.TypeAgentAdd, "agent-a", info.ID, map[string]string{"id": "agent-a"})

	// The session created through the first server is listed and joined
	// through the second, and delivered to there.
	b := dial(s2)
	var list envelope.SessionList
	if err := do(b, envelope.TypeSessionList, "agent-b", "", nil).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].ID != info.ID {
		t.Fatalf("session.list on the second server = %+v, want %s", list.Sessions, info.ID)
	}
	do(b, envelope.TypeAgentAdd, "agent-b", info.ID, map[string]string{"id": "agent-b"})
	submit(a, info.ID, "act-1", "first")
	if got := actionIDs(b, 1); got[0] != "act-1" {
		t.Fatalf("agent-b on the second server got %v, want act-1", got)
	}

	// The second server goes away; work goes on through the first.
	kill2()
	submit(a, info.ID, "act-2", "second")
	submit(a, info.ID, "act-3", "third")

	// agent-b reconnects to the first server: it rejoins and gets every
	// action still open, in order, and its history has lost nothing.
	b = dial(s1)
	do(b, envelope.TypeAgentAdd, "agent-b", info.ID, map[string]string{"id": "agent-b"})
	if got, want := actionIDs(b, 3), []string{"act-1", "act-2", "act-3"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("agent-b after reconnecting got %v, want %v", got, want)
	}
	var recs envelope.Records
	if err := do(b, envelope.TypeEventsStream, "agent-b", info.ID, map[string]any{"after": 0, "agent": "agent-b"}).Decode(&recs); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	var types []string
	for _, r := range recs.Records {
		seqs = append(seqs, r.Seq)
		types = append(types, r.Type)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Errorf("events for agent-b out of order: seqs %v", seqs)
		}
	}
	raw, _ := json.Marshal(types)
	if n := strings.Count(string(raw), envelope.TypeActionSubmit); n != 3 {
		t.Errorf("history for agent-b holds %d action.submit events, want 3 (%s)", n, raw)
	}
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
