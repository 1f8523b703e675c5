package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/host/run"
)

const chatKey = "sk-chat-test-key-98765"

// chatEnv is the environment of a weave process talking to srv: no user
// config, the model settings in WEAVE_MODEL_*, the key in its own variable.
func chatEnv(t *testing.T, srv *modeltest.Server) []string {
	t.Helper()
	return trustingEnv(t, []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(),
		"WEAVE_MODEL_PROVIDER=openai", "WEAVE_MODEL_NAME=fake-model", "WEAVE_MODEL_BASE_URL=" + srv.OpenAIURL(),
		"WEAVE_MODEL_API_KEY_ENV=WEAVE_TEST_MODEL_KEY", "WEAVE_TEST_MODEL_KEY=" + chatKey,
	})
}

// TestChatThroughTheBinary runs weave chat -p as a process against the fake
// model server: the model reaches the agents only through the host.
func TestChatThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("delegation to thread with a denied write", func(t *testing.T) {
		dir := project(t, nil)
		if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi from the file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		srv := modeltest.NewServer(t,
			modeltest.Turn{Text: "Asking Thread.", ToolCalls: []modeltest.ToolCall{{Name: "task", Args: `{"agent":"thread","prompt":"what is in hello.txt?"}`}}},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "read", Args: `{"path":"hello.txt"}`}, {Name: "write", Args: `{"path":"x.txt","content":"no"}`}}},
			modeltest.Turn{Text: "It says hi from the file."},
			modeltest.Turn{Text: "hello.txt says hi from the file."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "what does hello.txt say?")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if !strings.Contains(out, "Asking Thread.") || !strings.HasSuffix(out, "hello.txt says hi from the file.\n") {
			t.Errorf("stdout = %q, want Loom's text, ending with its answer", out)
		}
		if !strings.Contains(errOut, "→ task") || !strings.Contains(errOut, "[thread] → write") {
			t.Errorf("stderr = %q, want the tool calls shown", errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "x.txt")); err == nil {
			t.Error("thread, a read-only role, wrote x.txt")
		}
		reqs := srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d model requests, want 4", len(reqs))
		}
		// Thread's second request carries the file and the refusal.
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tools"`
		}
		if err := reqs[2].Decode(&body); err != nil {
			t.Fatal(err)
		}
		var results []string
		for _, m := range body.Messages {
			if m.Role == "tool" {
				results = append(results, m.Content)
			}
		}
		if len(results) != 2 || !strings.Contains(results[0], "hi from the file") ||
			results[1] != "denied by the capability matrix (thread has no write)" {
			t.Errorf("thread's tool results = %q, want the file and a refusal that says why", results)
		}
		var tools []string
		for _, tl := range body.Tools {
			tools = append(tools, tl.Function.Name)
		}
		if strings.Join(tools, ",") != "read,bash,glob,grep,webfetch,skill" {
			t.Errorf("thread was offered %v, want its row", tools)
		}
		// Loom's last request ties Thread's answer to the task call.
		if err := reqs[3].Decode(&body); err != nil {
			t.Fatal(err)
		}
		if last := body.Messages[len(body.Messages)-1]; last.Role != "tool" || !strings.Contains(last.Content, "It says hi from the file.") {
			t.Errorf("loom's task result = %+v, want thread's answer", last)
		}
		for _, r := range reqs {
			if r.APIKey != chatKey {
				t.Errorf("request %s sent key %q, want the one in WEAVE_TEST_MODEL_KEY", r.Path, r.APIKey)
			}
		}
		parent := assertSessionTranscript(t, dir)
		assertNoKeyUnder(t, filepath.Join(dir, ".weave"))

		// sessions show displays the tree: Thread's conversation under
		// Loom's task call, and the tokens of each.
		code, out, errOut = runWeave(t, bin, dir, chatEnv(t, srv), "sessions", "show", parent)
		for _, w := range []string{"you: what does hello.txt say?", "→ task thread prompt=what is in hello.txt?",
			"⤷ thread in session " + parent + ".thread-", "      loom: what is in hello.txt?", "        → write x.txt",
			"        ⎿ write: error: denied by the capability matrix (thread has no write)\n", "SESSION", "  " + parent + ".thread-", "loom: hello.txt says hi from the file."} {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("sessions show: exit %d, output lacks %q:\n%s%s", code, w, out, errOut)
			}
		}
		code, out, _ = runWeave(t, bin, dir, chatEnv(t, srv), "sessions", "list")
		if code != 0 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, parent+"\tloom\t") {
			t.Errorf("sessions list = %q, want the chat's session alone (delegations with --all)", out)
		}
		code, out, _ = runWeave(t, bin, dir, chatEnv(t, srv), "sessions", "list", "--all")
		if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "\tthread\t") || !strings.Contains(out, "\t"+parent+"\n") {
			t.Errorf("sessions list --all = %q, want the delegation too, naming its parent", out)
		}
	})

	t.Run("429 then success", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.Turn{Status: 429, RetryAfter: "1", Error: "slow down"}, modeltest.Turn{Text: "Here."})
		code, out, errOut := runWeave(t, bin, project(t, nil), chatEnv(t, srv), "chat", "-p", "hi")
		if code != 0 || out != "Here.\n" || len(srv.Requests()) != 2 {
			t.Errorf("exit %d, stdout %q, %d requests; want 0, the answer, 2 requests\nstderr: %s", code, out, len(srv.Requests()), errOut)
		}
	})

	t.Run("401 says which variable", func(t *testing.T) {
		dir := project(t, nil)
		srv := modeltest.NewServer(t, modeltest.Turn{Status: 401, Error: "Incorrect API key provided"})
		code, _, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "hi")
		if code != 1 || !strings.Contains(errOut, "401") || !strings.Contains(errOut, "WEAVE_TEST_MODEL_KEY") || strings.Contains(errOut, chatKey) {
			t.Errorf("exit %d, stderr %q; want 1 and a message naming the key variable, not the key", code, errOut)
		}
		assertNoKeyUnder(t, filepath.Join(dir, ".weave"))
	})

	t.Run("no model configured", func(t *testing.T) {
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
		code, _, errOut := runWeave(t, bin, project(t, nil), env, "chat", "-p", "hi")
		if code != 1 || !strings.Contains(errOut, "model.provider") {
			t.Errorf("exit %d, stderr %q; want 1 and the config key to set", code, errOut)
		}
	})

	t.Run("streaming reaches stdout before the turn ends", func(t *testing.T) {
		hold := make(chan struct{})
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "First words, then the rest.", Hold: hold})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "chat", "-p", "hi")
		cmd.Dir, cmd.Env = project(t, nil), chatEnv(t, srv)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The server holds the rest of the answer until this first word
		// has reached weave's stdout.
		first := make([]byte, len("First "))
		if _, err := io.ReadFull(stdout, first); err != nil || string(first) != "First " {
			t.Fatalf("first bytes %q, %v; want the first word while the turn is held", first, err)
		}
		close(hold)
		rest := new(bytes.Buffer)
		_, _ = rest.ReadFrom(stdout)
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if got := string(first) + rest.String(); got != "First words, then the rest.\n" {
			t.Errorf("stdout = %q", got)
		}
	})

	t.Run("compaction mid-conversation", func(t *testing.T) {
		dir := project(t, nil)
		if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte(strings.Repeat("hi from the file\n", 100)), 0o644); err != nil {
			t.Fatal(err)
		}
		script := func() []modeltest.Turn {
			return []modeltest.Turn{
				// 1950 of a 2000-token window: past the compact ratio.
				{Text: "Reading.", ToolCalls: []modeltest.ToolCall{{ID: "r1", Name: "read", Args: `{"path":"hello.txt"}`}}, Usage: &modeltest.Usage{Input: 1900, Output: 50}},
				{Text: "SUMMARY: the person asked what hello.txt says; it was read."},
				{Text: "hello.txt says hi from the file.", Usage: &modeltest.Usage{Input: 700, Output: 9}},
			}
		}
		srv := modeltest.NewServer(t, script()...)
		env := append(chatEnv(t, srv), "WEAVE_MODEL_CONTEXT_WINDOW=2000")
		code, out, errOut := runWeave(t, bin, dir, env, "chat", "-p", "what does hello.txt say?")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if !strings.HasSuffix(out, "hello.txt says hi from the file.\n") || strings.Contains(out, "SUMMARY") {
			t.Errorf("stdout = %q, want the answer and not the summary", out)
		}
		if !strings.Contains(errOut, "context compacted: 2k → ") {
			t.Errorf("stderr = %q, want the compaction line", errOut)
		}
		// While the summary is written, the person is told so.
		if i := strings.Index(errOut, "compacting the conversation: summarising "); i < 0 || i > strings.Index(errOut, "context compacted") {
			t.Errorf("stderr = %q, want a line while the summary is written, before the compaction line", errOut)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d model requests, want 3", len(reqs))
		}
		var body struct {
			Messages []struct {
				Role       string `json:"role"`
				Content    string `json:"content"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
		if err := reqs[2].Decode(&body); err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range body.Messages {
			roles = append(roles, m.Role)
		}
		// system, the summary, then the tail: the read call and its result.
		if strings.Join(roles, " ") != "system user assistant tool" || !strings.Contains(body.Messages[1].Content, "SUMMARY: the person asked") ||
			body.Messages[3].ToolCallID != "r1" || !strings.Contains(body.Messages[3].Content, "hi from the file") {
			t.Errorf("request after compaction: %+v", body.Messages)
		}
		files, _ := filepath.Glob(filepath.Join(dir, ".weave", "sessions", "chat-*.jsonl"))
		if len(files) != 1 {
			t.Fatalf("session files = %v", files)
		}
		b, _ := os.ReadFile(files[0])
		if !strings.Contains(string(b), `"type":"compaction"`) || !strings.Contains(string(b), "what does hello.txt say?") {
			t.Errorf("transcript lacks the compaction line or the first message:\n%s", b)
		}

		srv = modeltest.NewServer(t, script()...)
		env = append(chatEnv(t, srv), "WEAVE_MODEL_CONTEXT_WINDOW=2000")
		code, out, errOut = runWeave(t, bin, project(t, nil), env, "chat", "--json", "-p", "what does hello.txt say?")
		if code != 0 {
			t.Fatalf("--json: exit %d: %s", code, errOut)
		}
		var found bool
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev struct {
				Type       string
				Compaction *struct {
					Trigger      string
					TokensBefore int64 `json:"tokens_before"`
				}
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if ev.Type == "model.compacted" {
				found = ev.Compaction != nil && ev.Compaction.Trigger == "auto" && ev.Compaction.TokensBefore == 1950
			}
		}
		if !found {
			t.Errorf("--json output has no model.compacted event with its figures:\n%s", out)
		}
	})

	t.Run("json events", func(t *testing.T) {
		srv := modeltest.NewServer(t, modeltest.Turn{Text: "a b", Usage: &modeltest.Usage{Input: 50, Output: 2}})
		code, out, errOut := runWeave(t, bin, project(t, nil), chatEnv(t, srv), "chat", "--json", "-p", "hi")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var types []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev struct {
				Type, Text, Output, Session, Agent string
				ContextWindow                      int `json:"context_window"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			types = append(types, ev.Type)
			if ev.Type == "result" && (ev.Session == "" || ev.Agent != "loom" || ev.Output != "a b") {
				t.Errorf("result event %s, want its session, agent loom and the output", line)
			}
			if ev.Type == "model.usage" && ev.ContextWindow != 128000 {
				t.Errorf("model.usage context_window = %d, want the default 128000", ev.ContextWindow)
			}
		}
		if strings.Join(types, " ") != "model.delta model.delta model.usage result" {
			t.Errorf("event types = %v", types)
		}
	})
}

// assertNoKeyUnder fails if any file under dir holds the API key.
func assertNoKeyUnder(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(chatKey)) {
			t.Errorf("%s holds the API key", path)
		}
		return nil
	})
}

// assertSessionTranscript checks the session files of the delegation run:
// Loom's conversation in the chat's session, whose task result names the
// child session, and Thread's in that child session, which names its
// parent and the delegating agent first; each message once.
func assertSessionTranscript(t *testing.T, dir string) (parent string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, ".weave", "sessions", "chat-*.jsonl"))
	if len(files) != 2 {
		t.Fatalf("session files = %v, want the chat's and its delegation's", files)
	}
	parentID := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	childID := strings.TrimSuffix(filepath.Base(files[1]), ".jsonl")
	if !strings.HasPrefix(childID, parentID+".thread-") {
		t.Fatalf("child session %q, want it named under %q", childID, parentID)
	}
	describe := func(file string) []string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var l struct {
				Type, Agent, Parent, Child string
				Message                    *struct {
					Role, Content string
					ToolCalls     []struct{ Tool string } `json:"tool_calls"`
				}
				Usage *struct {
					InputTokens int64 `json:"input_tokens"`
				}
			}
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			desc := l.Agent + " " + l.Type
			switch {
			case l.Parent != "":
				desc += " " + l.Parent
			case l.Message != nil && len(l.Message.ToolCalls) > 0:
				desc += " " + l.Message.Role + " calls"
			case l.Message != nil:
				desc += " " + l.Message.Role
			case l.Type == "usage" && (l.Usage == nil || l.Usage.InputTokens == 0):
				desc += " without tokens"
			}
			if l.Child != "" {
				desc += " child " + l.Child
			}
			got = append(got, desc)
		}
		return got
	}
	want := []string{
		"loom conversation", "loom message user", "loom message assistant calls", "loom usage",
		"loom message tool child " + childID, "loom message assistant", "loom usage",
	}
	if got := describe(files[0]); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("session %s:\n%s\nwant:\n%s", parentID, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	want = []string{
		"loom parent " + parentID,
		"thread conversation", "thread message user", "thread message assistant calls", "thread usage",
		"thread message tool", "thread message tool", "thread message assistant", "thread usage",
	}
	if got := describe(files[1]); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("session %s:\n%s\nwant:\n%s", childID, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return parentID
}

// TestLiveViewShowsModelText: the model's text streams into the current
// task's tail, and model events leave the progress alone.
func TestLiveViewShowsModelText(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	m := liveModel{tail: 4, width: 80, now: func() time.Time { return now }}
	step := func(ev run.Event) {
		nm, _ := m.apply(ev)
		m = nm.(liveModel)
	}
	step(run.Event{Type: run.EventTaskStarted, Plan: "demo", Task: 2, Title: "Think", Completed: 1, Total: 3, Time: now})
	for _, piece := range []string{"Reading ", "the code", ".\nThen "} {
		step(run.Event{Type: run.EventModelDelta, Agent: "tapestry", Output: piece})
	}
	step(run.Event{Type: run.EventModelToolCall, Agent: "tapestry", Tool: "read"})
	step(run.Event{Type: run.EventModelCompacted, Agent: "tapestry", Output: "context compacted: 182k → 9k tokens"})
	got := m.View()
	for _, want := range []string{"1/3", "│ Reading the code.", "│ Then", "│ [tapestry] → read", "│ [tapestry] context compacted: 182k → 9k tokens"} {
		if !strings.Contains(got, want) {
			t.Errorf("View() = %q, want it to contain %q", got, want)
		}
	}
}
