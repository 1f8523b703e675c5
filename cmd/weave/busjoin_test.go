package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/envelope"
	"github.com/weavehq/weave/bus/guard"
	"github.com/weavehq/weave/host/model/modeltest"
)

// TestBusJoinPutsLoomInAnEnvelopeSession: a `weave bus serve` with its
// socket and HTTP faces, `weave bus join loom` as its own process with the
// fake model, and a client that talks to Loom in the session over the
// socket, then over HTTP, in the v1 envelope's own frames.
func TestBusJoinPutsLoomInAnEnvelopeSession(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	s := serveBus(t, "")
	srv := modeltest.NewServer(t,
		modeltest.Turn{Agent: "loom", Text: "Loom here, over the socket."},
		modeltest.Turn{Agent: "loom", Text: "Loom here, over HTTP."})
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()

	c, err := envelope.Dial(ctx, s.uds)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(typ, session string, payload any) envelope.Envelope {
		t.Helper()
		env, err := envelope.New(typ, "user", payload)
		if err != nil {
			t.Fatal(err)
		}
		env.Session = session
		rep, err := c.Do(ctx, env)
		if err == nil {
			err = rep.Err()
		}
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		return rep
	}
	var info envelope.SessionInfo
	if err := send(envelope.TypeSessionCreate, "", map[string]string{"name": "with loom"}).Decode(&info); err != nil {
		t.Fatal(err)
	}
	events := c.Events()
	send(envelope.TypeAgentAdd, info.ID, map[string]string{"id": "user", "name": "user"})

	dir := project(t, nil)
	join := weaveCmd(t, dir, chatEnv(t, srv), "bus", "join", "loom", "--session", info.ID, "--uds", s.uds)
	out, err := join.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	join.Stderr = &errOut
	if err := join.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = join.Process.Signal(os.Interrupt)
		_ = join.Wait()
	}()
	joined := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "joined") {
				joined <- sc.Text()
			}
		}
		close(joined)
	}()
	if line, ok := <-joined; !ok {
		t.Fatalf("bus join ended before joining: %s", errOut.String())
	} else if !strings.Contains(line, "loom") {
		t.Fatalf("bus join said %q", line)
	}

	action := func(id, text string) envelope.Submit {
		return envelope.Submit{GroupID: "g-" + id, Actions: []envelope.Action{{Type: envelope.ActionMessage, Kind: envelope.KindUser,
			Dst: "loom", ActionID: id, ActionIndex: envelope.IntPtr(0), Text: text}}}
	}
	// answered waits on next for Loom's reply to action id and its
	// completed result, and returns the reply's text.
	answered := func(id string, next func() envelope.Envelope) string {
		t.Helper()
		var text string
		for {
			ev := next()
			switch ev.Type {
			case envelope.TypeActionSubmit:
				var p envelope.Submit
				if ev.Src == "loom" && ev.Decode(&p) == nil && len(p.Actions) == 1 && p.Actions[0].ReplyToActionID == id {
					text = p.Actions[0].Text
				}
			case envelope.TypeActionResult:
				var r envelope.Result
				if ev.Decode(&r) == nil && r.ActionID == id && envelope.Terminal(r.Status) {
					if r.Status != envelope.ResultCompleted {
						t.Fatalf("action %s ended %s: %s", id, r.Status, r.Detail)
					}
					return text
				}
			}
		}
	}

	// Over the socket.
	send(envelope.TypeActionSubmit, info.ID, action("s1", "hello over the socket"))
	fromSocket := func() envelope.Envelope {
		select {
		case ev := <-events:
			return ev
		case <-ctx.Done():
			t.Fatalf("no answer from Loom over the socket; bus join said %s", errOut.String())
		}
		return envelope.Envelope{}
	}
	if got := answered("s1", fromSocket); got != "Loom here, over the socket." {
		t.Fatalf("reply over the socket = %q", got)
	}

	// Over HTTP, with the token bus serve keeps, the answer read from the
	// session's SSE stream.
	path, err := guard.TokenPath()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := guard.ReadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := envelope.New(envelope.TypeActionSubmit, "user", action("h1", "hello over HTTP"))
	env.Session = info.ID
	body, _ := json.Marshal(env)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.http+"/v1/envelopes", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rep envelope.Envelope
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || rep.Err() != nil {
		t.Fatalf("action.submit over HTTP: %v %v", err, rep.Err())
	}
	resp.Body.Close()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, s.http+"/v1/sessions/"+info.ID+"/events?agent=user&after=0", nil)
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	sc := bufio.NewScanner(stream.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	fromSSE := func() envelope.Envelope {
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				var ev envelope.Envelope
				if err := json.Unmarshal([]byte(strings.TrimSpace(d)), &ev); err != nil {
					t.Fatalf("event %q: %v", d, err)
				}
				return ev
			}
		}
		t.Fatalf("event stream ended (%v) before Loom answered; bus join said %s", sc.Err(), errOut.String())
		return envelope.Envelope{}
	}
	if got := answered("h1", fromSSE); got != "Loom here, over HTTP." {
		t.Fatalf("reply over HTTP = %q", got)
	}
}
