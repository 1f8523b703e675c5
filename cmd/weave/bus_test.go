package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/envelope"
	"github.com/weavehq/weave/bus/guard"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/host/busface"
)

// busRoot is a root command holding the bus commands, as root.go will.
func busRoot(ctx context.Context, s *Streams) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{Use: "weave", SilenceUsage: true, SilenceErrors: true}
	root.SetContext(ctx)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: fmt.Errorf("%w\nrun `%s --help` for usage", err, c.CommandPath())}
	})
	root.PersistentFlags().StringVar(&g.Dir, "dir", "", "project directory")
	root.AddCommand(newCmdBus(g, s), newCmdSendMessage(g, s))
	return root
}

// runBus runs the bus commands as run does and returns the exit code.
func runBus(ctx context.Context, s *Streams, args ...string) int {
	root := busRoot(ctx, s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.err != nil {
		fmt.Fprintf(s.ErrOut, "weave: %v\n", err)
	}
	return exitCode(err)
}

func busCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runBus(context.Background(), &Streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, args...)
	return code, out.String(), errOut.String()
}

// lines is a Writer that hands each complete line to a channel.
type lines struct {
	mu  sync.Mutex
	buf []byte
	ch  chan string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.ch <- string(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

// served is a `weave bus serve` running in this process.
type served struct {
	ws, http, uds string
}

// serveBus runs `weave bus serve` on 127.0.0.1:0 with every face until the
// test ends, and returns the addresses it printed.
func serveBus(t *testing.T, token string) served {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("WEAVE_BUS_URL", "")
	t.Setenv("WEAVE_BUS_TOKEN", token)
	sock := filepath.Join(t.TempDir(), "bus.sock")
	ctx, cancel := context.WithCancel(context.Background())
	out := &lines{ch: make(chan string, 16)}
	done := make(chan int, 1)
	go func() {
		done <- runBus(ctx, &Streams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard},
			"--dir", t.TempDir(), "bus", "serve", "--ws", "127.0.0.1:0", "--uds", sock, "--http", "127.0.0.1:0")
	}()
	t.Cleanup(func() {
		cancel()
		if code := bustest.Recv(t, "bus serve to stop", done); code != exitOK {
			t.Errorf("bus serve exited %d after Ctrl-C, want 0", code)
		}
	})
	var s served
	for s.http == "" {
		select {
		case line := <-out.ch:
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			switch f[0] {
			case "ws":
				s.ws = f[1]
			case "http":
				s.http = f[1]
			case "uds":
				s.uds = f[1]
			}
		case code := <-done:
			t.Fatalf("bus serve exited %d before listening", code)
		}
	}
	return s
}

func dialPeer(t *testing.T, url, id string) *jsonrpc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	// A local peer that knows weave reads the token bus serve keeps.
	path, err := guard.TokenPath()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := guard.ReadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if tok == "" {
		tok = os.Getenv("WEAVE_BUS_TOKEN")
	}
	c, err := jsonrpc.Dial(ctx, url, jsonrpc.ClientInfo{Name: "peer", Version: "1"}, jsonrpc.WithClientID(id), jsonrpc.WithToken(tok))
	if err != nil {
		t.Fatalf("Dial(%s) = %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestBusServeAndSendMessage(t *testing.T) {
	s := serveBus(t, "")
	if !strings.HasPrefix(s.ws, "ws://127.0.0.1:") || !strings.HasPrefix(s.http, "http://127.0.0.1:") || s.uds == "" {
		t.Fatalf("bus serve printed %+v, want ws://, http:// and socket addresses", s)
	}
	ctx := context.Background()
	peer := dialPeer(t, s.ws, "echo-peer")
	got := make(chan bus.Message, 4)
	err := peer.Subscribe(ctx, "agent:echo", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		got <- m
		return bus.Ack{Processed: true, StopPropagation: true, Message: "echoed"}, nil
	}, jsonrpc.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	payloadFile := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(payloadFile, []byte(`{"type":"plaintext_message","text":"from a file"}`), 0o644)

	tests := []struct {
		name, stdin, payload string
		env                  bool // the URL from WEAVE_BUS_URL instead of --bus
		wantText             string
	}{
		{name: "inline", payload: `{"type":"plaintext_message","text":"inline"}`, wantText: "inline"},
		{name: "file", payload: "@" + payloadFile, wantText: "from a file"},
		{name: "stdin", stdin: `{"type":"plaintext_message","text":"piped"}`, payload: "-", wantText: "piped"},
		{name: "url from env", payload: `{"type":"plaintext_message","text":"env"}`, env: true, wantText: "env"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"send-message", "--topic", "agent:echo", "--payload", tc.payload, "--header", "trace=abc"}
			if tc.env {
				t.Setenv("WEAVE_BUS_URL", s.ws)
			} else {
				args = append(args, "--bus", s.ws)
			}
			code, out, errOut := busCLI(t, tc.stdin, args...)
			if code != exitOK {
				t.Fatalf("send-message = %d, stderr %q; want 0", code, errOut)
			}
			var res sendOutput
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("send-message printed %q, not JSON: %v", out, err)
			}
			if !res.Processed || !res.StopPropagation || res.Delivered != 1 || len(res.Acks) != 1 ||
				res.Acks[0].Subscriber != "echo-peer" || res.Acks[0].Message != "echoed" {
				t.Errorf("send-message result = %+v, want one processed ack from echo-peer", res)
			}
			m := bustest.Recv(t, "the message at the peer", got)
			var p map[string]any
			_ = json.Unmarshal(m.Payload, &p)
			if p["text"] != tc.wantText || m.Headers["trace"] != "abc" {
				t.Errorf("peer got %s with headers %v, want text %q and header trace=abc", m.Payload, m.Headers, tc.wantText)
			}
		})
	}

	t.Run("nobody subscribed", func(t *testing.T) {
		code, out, errOut := busCLI(t, "", "send-message", "--bus", s.ws, "--topic", "agent:nobody", "--payload", `{"type":"x"}`)
		if code != exitFailed || !strings.Contains(errOut, "nothing on the bus is subscribed to agent:nobody") {
			t.Errorf("send-message to nobody = %d %q, want 1 saying nothing is subscribed", code, errOut)
		}
		if !strings.Contains(out, `"delivered": 0`) {
			t.Errorf("send-message to nobody printed %q, want the result JSON still", out)
		}
	})

	t.Run("envelope faces", func(t *testing.T) {
		sessions := make(chan bus.Message, 4)
		watcher := dialPeer(t, s.ws, "watcher")
		if err := watcher.Subscribe(ctx, "session:*", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
			sessions <- m
			return bus.Ack{Processed: true}, nil
		}, jsonrpc.SubscribeOptions{}); err != nil {
			t.Fatal(err)
		}
		// Creating a session changes the bus: the HTTP face wants the
		// token bus serve keeps.
		tok, err := guard.ReadTokenFile(filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "weave", "bus.token"))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, s.http+"/api/sessions", strings.NewReader(`{"name":"demo"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("POST /api/sessions = %d, want 201", resp.StatusCode)
		}
		m := bustest.Recv(t, "the session event on the bus", sessions)
		if !strings.Contains(string(m.Payload), "session.created") {
			t.Errorf("bus got %s on %s, want the session.created event", m.Payload, m.Topic)
		}
		fi, err := os.Stat(s.uds)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("socket %s = %v, %v; want mode 0600", s.uds, fi, err)
		}
		c, err := net.Dial("unix", s.uds)
		if err != nil {
			t.Errorf("dial the socket = %v", err)
		} else {
			c.Close()
		}
	})
}

func TestBusDLQ(t *testing.T) {
	s := serveBus(t, "")
	ctx := context.Background()
	peer := dialPeer(t, s.ws, "flaky")
	var calls atomic.Int32
	err := peer.Subscribe(ctx, "task:1", func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		if calls.Add(1) == 1 {
			return bus.Ack{}, errors.New("database is down")
		}
		return bus.Ack{Processed: true, Message: "stored"}, nil
	}, jsonrpc.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := busCLI(t, "", "send-message", "--bus", s.ws, "--topic", "task:1", "--payload", `{"type":"task_request"}`); code != exitFailed {
		t.Fatalf("send-message to a failing peer = %d %q, want 1", code, errOut)
	}

	code, out, errOut := busCLI(t, "", "bus", "dlq", "--json", "--bus", s.ws)
	if code != exitOK {
		t.Fatalf("bus dlq = %d %q", code, errOut)
	}
	var dls []bus.DeadLetter
	if err := json.Unmarshal([]byte(out), &dls); err != nil {
		t.Fatalf("bus dlq --json printed %q: %v", out, err)
	}
	if len(dls) != 1 || dls[0].Message.Topic != "task:1" || dls[0].Subscriber != "flaky" {
		t.Fatalf("dead letters = %+v, want the one for flaky on task:1", dls)
	}
	code, out, _ = busCLI(t, "", "bus", "dlq", "--bus", s.ws)
	if code != exitOK || !strings.Contains(out, dls[0].ID) || !strings.Contains(out, "task:1") {
		t.Errorf("bus dlq = %d %q, want a table with %s", code, out, dls[0].ID)
	}

	code, out, errOut = busCLI(t, "", "bus", "dlq", "replay", dls[0].ID, "--bus", s.ws)
	if code != exitOK || !strings.Contains(out, `"processed": true`) {
		t.Errorf("bus dlq replay = %d %q %q, want the processed result", code, out, errOut)
	}
	code, out, _ = busCLI(t, "", "bus", "dlq", "--bus", s.ws)
	if code != exitOK || !strings.Contains(out, "no dead letters") {
		t.Errorf("bus dlq after replay = %d %q, want none left", code, out)
	}
	code, _, errOut = busCLI(t, "", "bus", "dlq", "replay", "nope", "--bus", s.ws)
	if code != exitFailed || !strings.Contains(errOut, `no dead letter "nope"`) {
		t.Errorf("bus dlq replay nope = %d %q, want 1 naming the id", code, errOut)
	}
}

func TestBusCommandUsage(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("WEAVE_BUS_URL", "")
	t.Setenv("WEAVE_BUS_TOKEN", "")
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"text": 1`), 0o644)
	url := "ws://127.0.0.1:1"
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"serve without faces", "", []string{"bus", "serve"}, exitUsage, "at least one of --ws"},
		{"serve beyond loopback without token", "", []string{"bus", "serve", "--ws", "0.0.0.0:0"}, exitUsage, "beyond loopback"},
		{"dlq without bus", "", []string{"bus", "dlq"}, exitUsage, "no bus to read dead letters from"},
		{"send without topic", "", []string{"send-message", "--bus", url, "--payload", `{"type":"x"}`}, exitUsage, "needs --topic"},
		{"send with a bad topic", "", []string{"send-message", "--bus", url, "--topic", "a*", "--payload", `{"type":"x"}`}, exitUsage, "--topic"},
		{"send without payload", "", []string{"send-message", "--bus", url, "--topic", "t"}, exitUsage, "needs --payload"},
		{"payload not JSON", "", []string{"send-message", "--bus", url, "--topic", "t", "--payload", "hello"}, exitUsage, "is not valid JSON"},
		{"payload not an object", "", []string{"send-message", "--bus", url, "--topic", "t", "--payload", `[1,2]`}, exitUsage, "must be a JSON object"},
		{"payload without type", "", []string{"send-message", "--bus", url, "--topic", "t", "--payload", `{"text":"hi"}`}, exitUsage, `has no "type"`},
		{"payload with empty type", "", []string{"send-message", "--bus", url, "--topic", "t", "--payload", `{"type":""}`}, exitUsage, `has no "type"`},
		{"payload file missing", "", []string{"send-message", "--bus", url, "--topic", "t", "--payload", "@/nope.json"}, exitUsage, "no such file"},
		{"payload file broken", "", []string{"send-message", "--bus", url, "--topic", "t", "--payload", "@" + bad}, exitUsage, "is not valid JSON"},
		{"stdin without type", `{"a":1}`, []string{"send-message", "--bus", url, "--topic", "t", "--payload", "-"}, exitUsage, "on stdin has no"},
		{"bad header", "", []string{"send-message", "--bus", url, "--topic", "t", "--payload", `{"type":"x"}`, "--header", "novalue"}, exitUsage, "KEY=VALUE"},
		{"send without bus", "", []string{"send-message", "--topic", "t", "--payload", `{"type":"x"}`}, exitUsage, "WEAVE_BUS_URL"},
		{"send to a dead bus", "", []string{"send-message", "--bus", url, "--topic", "t", "--payload", `{"type":"x"}`}, exitFailed, "is `weave bus serve"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := busCLI(t, tc.stdin, append([]string{"--dir", t.TempDir()}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("weave %v = %d %q, want %d mentioning %q", tc.args, code, errOut, tc.code, tc.want)
			}
		})
	}
}

func TestWriteLoopInfo(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	state := loop.NewState("loop-1700000000-42", now.Add(-3*time.Minute), loop.Frame{ID: "loop-1700000000-42", Mode: loop.ModeLoop, Iter: 2, Max: 5, PromptFile: "/p/.weave/plans/x.md"})
	done := loop.NewDone(loop.ReasonComplete)
	cancelled := loop.NewAbort(loop.ReasonUserCancelled)
	failed := loop.NewAbort("")
	interrupted := loop.NewPause(loop.ReasonUserCancelled)
	paused := loop.NewPause("")
	tests := []struct {
		name string
		info *busface.LoopInfo
		want string
	}{
		{"no bus", nil, ""},
		{"nothing yet", &busface.LoopInfo{Bus: "ws://b"}, "loop: nothing published on loop:current at ws://b\n"},
		{"running", &busface.LoopInfo{Event: &state}, "loop: running, task 2 of 5 (run loop-1700000000-42, updated 3m0s ago)\n"},
		{"stale", &busface.LoopInfo{Event: &state, Stale: true}, "loop: running, task 2 of 5 (run loop-1700000000-42, updated 3m0s ago)\n      stale: no update for over 2h0m0s; the run that wrote it is presumed dead\n"},
		{"done", &busface.LoopInfo{Event: &done}, "loop: done (COMPLETE)\n"},
		{"cancelled", &busface.LoopInfo{Event: &cancelled}, "loop: aborted (USER_CANCELLED)\n"},
		{"failed", &busface.LoopInfo{Event: &failed}, "loop: aborted (a task failed)\n"},
		{"interrupted", &busface.LoopInfo{Event: &interrupted}, "loop: paused by the user; `weave start-work` resumes it\n"},
		{"paused", &busface.LoopInfo{Event: &paused}, "loop: paused (a task failed or the run paused); `weave start-work` resumes it\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeLoopInfo(&b, tc.info, now)
			if b.String() != tc.want {
				t.Errorf("writeLoopInfo() = %q, want %q", b.String(), tc.want)
			}
		})
	}
}

func TestBusServeDefaultHandlerLeavesHooksAlone(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	t.Setenv("WEAVE_BUS_AGENT_COMMAND", "touch "+marker)
	s := serveBus(t, "")
	code, out, errOut := busCLI(t, "", "send-message", "--bus", s.ws, "--topic", "hook:tool.execute.before", "--payload", `{"type":"hook.event"}`)
	if code != exitFailed || !strings.Contains(out, `"processed": false`) {
		t.Errorf("send-message on a hook topic = %d %q %q, want 1 and not processed", code, out, errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("a hook request started bus.agent_command; want it left alone")
	}
	// A message for an agent does start it (it exits at once here).
	code, _, errOut = busCLI(t, "", "send-message", "--bus", s.ws, "--topic", "agent:new", "--payload", `{"type":"task_request"}`)
	if code != exitFailed || !strings.Contains(errOut, "exited before subscribing") {
		t.Errorf("send-message to agent:new = %d %q, want the default handler's report", code, errOut)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the agent command did not run for agent:new: %v", err)
	}
}

func TestBusServeToken(t *testing.T) {
	s := serveBus(t, "s3cret")
	get := func(auth string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.http+"/api/health", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Errorf("GET /api/health without token = %d, want 401", code)
	}
	if code := get("Bearer wrong"); code != http.StatusUnauthorized {
		t.Errorf("GET /api/health with a wrong token = %d, want 401", code)
	}
	if code := get("Bearer s3cret"); code != http.StatusOK {
		t.Errorf("GET /api/health with the token = %d, want 200", code)
	}
	// send-message and bus dlq take the token from WEAVE_BUS_TOKEN.
	if code, _, errOut := busCLI(t, "", "send-message", "--bus", s.ws, "--topic", "agent:none", "--payload", `{"type":"x"}`); code != exitFailed || !strings.Contains(errOut, "nothing on the bus is subscribed") {
		t.Errorf("send-message with the token = %d %q, want it through to the bus (nothing subscribed)", code, errOut)
	}
	if code, out, errOut := busCLI(t, "", "bus", "dlq", "--bus", s.ws); code != exitOK || !strings.Contains(out, "no dead letters") {
		t.Errorf("bus dlq with the token = %d %q %q", code, out, errOut)
	}
	t.Setenv("WEAVE_BUS_TOKEN", "")
	if code, _, errOut := busCLI(t, "", "send-message", "--bus", s.ws, "--topic", "agent:none", "--payload", `{"type":"x"}`); code != exitFailed || !strings.Contains(errOut, "needs the bus token") {
		t.Errorf("send-message to an agent without the token = %d %q, want refused", code, errOut)
	}
}

// With no token configured, bus serve creates one that local weave
// commands read, and that a peer needs to answer hooks: a token-less peer
// (bub's client sends none) keeps plain topics only.
func TestBusServeCreatesToken(t *testing.T) {
	s := serveBus(t, "")
	path := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "weave", "bus.token")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("bus serve made no token file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, want 0600", fi.Mode().Perm())
	}
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	peer, err := jsonrpc.Dial(ctx, s.ws, jsonrpc.ClientInfo{Name: "bub"}, jsonrpc.WithClientID("hijacker")) // no token
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	modify := func(context.Context, bus.Message) (bus.Ack, error) {
		return bus.Ack{Processed: true, Result: json.RawMessage(`{"action":"modify","args":{"command":"echo HIJACKED"}}`)}, nil
	}
	var rpcErr *jsonrpc.Error
	if err := peer.Subscribe(ctx, "hook:tool.execute.before", modify, jsonrpc.SubscribeOptions{}); !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeForbidden {
		t.Errorf("token-less Subscribe(hook:tool.execute.before) = %v, want forbidden", err)
	}
	// Plain topics still work without the token.
	if err := peer.Subscribe(ctx, "inbound:*", func(context.Context, bus.Message) (bus.Ack, error) { return bus.Ack{Processed: true}, nil }, jsonrpc.SubscribeOptions{}); err != nil {
		t.Errorf("token-less Subscribe(inbound:*) = %v", err)
	}
	if code, out, errOut := busCLI(t, "", "send-message", "--bus", s.ws, "--topic", "inbound:c1", "--payload", `{"type":"plaintext_message","content":"hi"}`); code != exitOK || !strings.Contains(out, "hijacker") {
		t.Errorf("send-message to inbound:c1 = %d %q %q, want delivered to the peer", code, out, errOut)
	}
	// Local commands read the token file: the admin routes answer them.
	if code, out, errOut := busCLI(t, "", "bus", "dlq", "--bus", s.ws); code != exitOK || !strings.Contains(out, "no dead letters") {
		t.Errorf("bus dlq with the token file = %d %q %q", code, out, errOut)
	}
	// The admin routes refuse a client without it.
	resp, err := http.Get(strings.Replace(s.ws, "ws://", "http://", 1) + "/bus/dead-letters")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /bus/dead-letters without the token = %d, want 401", resp.StatusCode)
	}
}

// On the envelope HTTP face, the token bus serve creates guards every
// command that changes what a session's agents do; reads stay open to local
// peers, and the Unix socket (mode 0600) needs none.
func TestBusServeHTTPFaceNeedsTheTokenToSteer(t *testing.T) {
	s := serveBus(t, "")
	path := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "weave", "bus.token")
	tok, err := guard.ReadTokenFile(path)
	if err != nil || tok == "" {
		t.Fatalf("token file %s: %q, %v", path, tok, err)
	}
	post := func(route, auth string, body []byte) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.http+route, bytes.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	env := func(typ string, payload any) []byte {
		t.Helper()
		e, err := envelope.New(typ, "peer", payload)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(e)
		return b
	}
	create := env(envelope.TypeSessionCreate, map[string]string{"name": "s"})
	if code, body := post("/v1/envelopes", "", create); code != http.StatusUnauthorized || !strings.Contains(body, path) {
		t.Errorf("session.create without the token = %d %s; want 401 naming %s", code, body, path)
	}
	if code, body := post("/v1/envelopes", "wrong", create); code != http.StatusUnauthorized {
		t.Errorf("session.create with a wrong token = %d %s; want 401", code, body)
	}
	if code, body := post("/api/sessions", "", []byte(`{"name":"s"}`)); code != http.StatusUnauthorized {
		t.Errorf("POST /api/sessions without the token = %d %s; want 401", code, body)
	}
	if code, body := post("/api/sessions/x/messages", "", []byte(`{"text":"rm -rf","agent_ids":["a"]}`)); code != http.StatusUnauthorized {
		t.Errorf("POST /api/sessions/x/messages without the token = %d %s; want 401", code, body)
	}
	code, body := post("/v1/envelopes", tok, create)
	if code != http.StatusOK {
		t.Fatalf("session.create with the token = %d %s; want 200", code, body)
	}
	var reply envelope.Envelope
	var info envelope.SessionInfo
	if err := json.Unmarshal([]byte(body), &reply); err != nil || reply.Decode(&info) != nil || info.ID == "" {
		t.Fatalf("session.create reply %s: %v", body, err)
	}
	add := env(envelope.TypeAgentAdd, map[string]string{"id": "intruder", "name": "intruder"})
	if code, body := post("/v1/envelopes", "", withSession(t, add, info.ID)); code != http.StatusUnauthorized {
		t.Errorf("agent.add without the token = %d %s; want 401", code, body)
	}
	// Reads need no token.
	if code, body := post("/v1/envelopes", "", env(envelope.TypeSessionList, nil)); code != http.StatusOK || !strings.Contains(body, info.ID) {
		t.Errorf("session.list without the token = %d %s; want 200 listing %s", code, body, info.ID)
	}
	resp, err := http.Get(s.http + "/api/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /api/sessions without the token = %d, want 200", resp.StatusCode)
	}
	// The socket is its own access control.
	c, err := envelope.Dial(context.Background(), s.uds)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := envelope.New(envelope.TypeSessionCreate, "peer", map[string]string{"name": "over the socket"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Do(context.Background(), e); err != nil || r.Err() != nil {
		t.Errorf("session.create over the socket = %v, %v; want it to need no token", err, r.Err())
	}
}

func withSession(t *testing.T, raw []byte, session string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["session"] = session
	b, _ := json.Marshal(m)
	return b
}

// A client that sends its body slowly is cut off after
// bus.http_body_timeout instead of holding its connection forever, and
// connections past bus.max_connections are answered 503.
func TestBusServeSlowBodiesAndConnectionCap(t *testing.T) {
	t.Setenv("WEAVE_BUS_HTTP_BODY_TIMEOUT", "300ms")
	t.Setenv("WEAVE_BUS_MAX_CONNECTIONS", "2")
	s := serveBus(t, "")
	addr := strings.TrimPrefix(s.http, "http://")
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	slow := dial()
	fmt.Fprintf(slow, "POST /api/sessions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"na", addr)
	_ = slow.SetReadDeadline(time.Now().Add(bustest.Deadline))
	// The server answers the timed-out body and closes, or just closes:
	// either way the read ends well before the test's deadline.
	if _, err := io.ReadAll(slow); err != nil {
		t.Errorf("a slow body held its connection: %v", err)
	}
	// Two connections that have sent nothing yet hold both places (the
	// header timeout, 10s, would free them).
	dial()
	dial()
	// Each try is a new connection: a kept-alive one, accepted before the
	// two above were counted, would hold a place itself and never be refused.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	bustest.WaitFor(t, "a connection past the cap to be refused", func() bool {
		resp, err := client.Get(s.http + "/api/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "bus.max_connections")
	})
}
