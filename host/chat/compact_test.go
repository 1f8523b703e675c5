package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/host/run/runtest"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// eventLog is a hook that records chat.message and the compaction events
// in the order they fire.
type eventLog struct {
	mu     sync.Mutex
	names  []string
	events []plugins.Event
	// block, when set, blocks session.compacting with this reason;
	// context is added to it.
	block, context string
}

func (h *eventLog) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.events", Kind: plugins.KindHook,
		Events: []string{plugins.EventChatMessage, plugins.EventSessionCompacting, plugins.EventSessionCompacted}}, nil
}

func (h *eventLog) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	name := ev.Name
	if src, ok := ev.Data["source"].(string); ok {
		name += ":" + src
	}
	h.names = append(h.names, name)
	h.events = append(h.events, ev)
	if ev.Name == plugins.EventSessionCompacting && h.block != "" {
		return plugins.Decision{Action: plugins.Block, Reason: h.block}, nil
	}
	if ev.Name == plugins.EventSessionCompacting && h.context != "" {
		return plugins.Decision{Action: plugins.Allow, Context: h.context}, nil
	}
	return plugins.Decision{}, nil
}

func (h *eventLog) order() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.names, " ")
}

func (h *eventLog) find(name string) (plugins.Event, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.events {
		if ev.Name == name {
			return ev, true
		}
	}
	return plugins.Event{}, false
}

// compactRig is a model door on a fake model with a window of window
// tokens, the tools of project through the same hooks, and a bus.
type compactRig struct {
	m     *Door
	tools *tools.Tools
	hook  *eventLog
	bus   bus.Bus
	srv   *modeltest.Server

	mu     sync.Mutex
	events []Event
}

func newCompactRig(t *testing.T, project string, window int, turns ...modeltest.Turn) *compactRig {
	t.Helper()
	return newCompactRigWith(t, project, window, nil, turns...)
}

// newCompactRigWith is newCompactRig with more hooks in the pipeline.
func newCompactRigWith(t *testing.T, project string, window int, more []hooks.Registered, turns ...modeltest.Turn) *compactRig {
	t.Helper()
	r := &compactRig{hook: &eventLog{}, srv: modeltest.NewServer(t, turns...)}
	info, _ := r.hook.Info(context.Background())
	pipeline, err := hooks.NewPipeline(append([]hooks.Registered{{Hook: r.hook, Info: info}}, more...), hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.bus, err = bus.NewMemory(bus.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.bus.Close() })
	cfg := config.Default()
	cfg.Model = config.ModelConfig{Provider: "openai", Name: "m", BaseURL: r.srv.OpenAIURL(), ContextWindow: window}
	logger := slog.New(slog.DiscardHandler)
	r.m = New(Options{Project: project, Config: cfg, Pipeline: pipeline, Bus: r.bus, Logger: logger, Getenv: func(string) string { return "" }})
	gate, err := tools.NewGate(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if r.tools, err = tools.New(project, cfg, gate, pipeline, tools.WithModel(r.m.ModelFunc), tools.WithLogger(logger)); err != nil {
		t.Fatal(err)
	}
	r.m.plans = toolsPlanSnapshot(r.tools)
	t.Cleanup(r.m.Observe(func(ev Event) {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
	}))
	return r
}

// ask runs role's model loop on prompt in session, as Host.Ask does, in
// process.
func (r *compactRig) ask(t *testing.T, role, session, prompt string) plugins.AgentResponse {
	t.Helper()
	ro, _ := agents.RoleByName(role)
	history, err := r.m.History(session, role)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := agents.NewModelAgent(ro, agents.Overrides{}).Handle(context.Background(),
		r.tools.Services(tools.Caller{Agent: role}, session, tools.Scope{}, nil),
		plugins.AgentRequest{SessionID: session, Prompt: prompt, History: history})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error != "" {
		t.Fatalf("%s answered with an error: %s", role, resp.Error)
	}
	return resp
}

func (r *compactRig) compactions() []Compaction {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Compaction
	for _, ev := range r.events {
		if ev.Type == ModelCompacted && ev.Compaction != nil {
			out = append(out, *ev.Compaction)
		}
	}
	return out
}

// wireMessage is an OpenAI chat message as the fake model received it.
type wireMessage struct {
	Role       string
	Text       string
	ToolCallID string
	Calls      []string
}

func wireMessages(t *testing.T, req modeltest.Request) (system string, msgs []wireMessage) {
	t.Helper()
	var body struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				Function struct{ Name, Arguments string } `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := req.Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, m := range body.Messages {
		w := wireMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			w.Text = s
		} else {
			var parts []struct{ Text string }
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				w.Text += p.Text
			}
		}
		for _, c := range m.ToolCalls {
			w.Calls = append(w.Calls, c.Function.Name+" "+c.Function.Arguments)
		}
		if m.Role == "system" || m.Role == "developer" {
			system = w.Text
			continue
		}
		msgs = append(msgs, w)
	}
	return system, msgs
}

func transcriptLines(t *testing.T, project, session string) []SessionLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(project, ".weave", "sessions", session+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []SessionLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var line SessionLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("transcript line %q: %v", l, err)
		}
		out = append(out, line)
	}
	return out
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A conversation that crosses the compact ratio mid-request: the next call
// carries the summary instead of the old messages, the tail as it was; the
// hooks, the bus and the transcript see it; a new process reads the same
// conversation back.
func TestCompactionAtTheRatio(t *testing.T) {
	project := runtest.NewProject(t, nil)
	aText, bText, cText := strings.Repeat("alpha ", 100), strings.Repeat("bravo ", 80), strings.Repeat("charlie ", 10)
	writeFile(t, project, "a.txt", aText)
	writeFile(t, project, "b.txt", bText)
	writeFile(t, project, "c.txt", cText)
	r := newCompactRig(t, project, 1000,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "read", Args: `{"path":"a.txt"}`}}, Usage: &modeltest.Usage{Input: 300, Output: 10}},
		// 960 of 1000 reaches the default compact ratio, 0.95.
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "c2", Name: "read", Args: `{"path":"b.txt"}`}}, Usage: &modeltest.Usage{Input: 950, Output: 10}},
		modeltest.Turn{Text: "SUMMARY: the person wants three files read; a.txt holds alpha.", Usage: &modeltest.Usage{Input: 500, Output: 20}},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "c3", Name: "read", Args: `{"path":"c.txt"}`}}, Usage: &modeltest.Usage{Input: 400, Output: 10}},
		modeltest.Turn{Text: "All three read.", Usage: &modeltest.Usage{Input: 450, Output: 5}},
	)
	resp := r.ask(t, agents.Thread, "s1", "Read a.txt, b.txt and c.txt.")
	if resp.Output != "All three read." {
		t.Fatalf("answer = %q", resp.Output)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}

	// The third request is the summary's: the compaction prompt, and the
	// conversation so far as text.
	system, msgs := wireMessages(t, reqs[2])
	if !strings.Contains(system, "working summary") || len(msgs) != 1 || !strings.Contains(msgs[0].Text, "Read a.txt, b.txt and c.txt.") ||
		!strings.Contains(msgs[0].Text, "alpha alpha") || !strings.Contains(msgs[0].Text, "→ calls read") {
		t.Errorf("summary request: system %.60q, messages %+v; want the compaction prompt and the conversation", system, msgs)
	}
	if strings.Contains(msgs[0].Text, "bravo") {
		t.Errorf("summary request covers the kept tail (b.txt): %.300q", msgs[0].Text)
	}

	// The fourth carries the summary in place of the first messages, then
	// the tail as it was: the call for b.txt and its result.
	_, msgs = wireMessages(t, reqs[3])
	if len(msgs) != 3 {
		t.Fatalf("request after compaction has %d messages %+v, want summary, call, result", len(msgs), msgs)
	}
	if msgs[0].Role != "user" || !strings.Contains(msgs[0].Text, "SUMMARY: the person wants three files read") ||
		!strings.Contains(msgs[0].Text, "Do not restart the work") || strings.Contains(msgs[0].Text, "alpha alpha") {
		t.Errorf("first message = %+v, want the summary and the line to carry on", msgs[0])
	}
	if msgs[1].Role != "assistant" || len(msgs[1].Calls) != 1 || !strings.Contains(msgs[1].Calls[0], "b.txt") ||
		msgs[2].Role != "tool" || msgs[2].ToolCallID != "c2" || !strings.Contains(msgs[2].Text, bText) {
		t.Errorf("tail = %+v, want the b.txt call and its whole result", msgs[1:])
	}
	// And the call after keeps the summary first.
	_, msgs = wireMessages(t, reqs[4])
	if len(msgs) != 5 || !strings.Contains(msgs[0].Text, "SUMMARY:") || msgs[4].ToolCallID != "c3" {
		t.Errorf("last request = %+v, want the summary, the b.txt and c.txt turns", msgs)
	}

	// Hooks: the compaction between the answer that crossed the ratio and
	// the next one.
	want := "chat.message:user chat.message:assistant chat.message:assistant session.compacting session.compacted chat.message:assistant chat.message:assistant"
	if got := r.hook.order(); got != want {
		t.Errorf("hook events:\n%s\nwant\n%s", got, want)
	}
	ev, _ := r.hook.find(plugins.EventSessionCompacting)
	if ev.SessionID != "s1" || ev.Agent != agents.Thread || ev.Data["trigger"] != CompactAuto || ev.Data["messages"] != 3 ||
		!strings.HasSuffix(ev.Data["transcript_path"].(string), filepath.Join("sessions", "s1.jsonl")) {
		t.Errorf("session.compacting = %+v", ev)
	}
	ev, _ = r.hook.find(plugins.EventSessionCompacted)
	if !strings.Contains(ev.Data["summary"].(string), "SUMMARY:") || ev.Data["tokens_before"] != int64(960) {
		t.Errorf("session.compacted data = %+v, want the summary and 960 tokens before", ev.Data)
	}
	cs := r.compactions()
	if len(cs) != 1 || cs[0].Messages != 3 || cs[0].TokensBefore != 960 || cs[0].TokensAfter <= 0 || cs[0].TokensAfter >= 960 {
		t.Errorf("model.compacted events = %+v", cs)
	}
	if as := runtest.Anchors(t, r.bus); len(as) != 1 || !strings.Contains(as[0].Goal, "s1") || as[0].NextStep == "" {
		t.Errorf("anchors = %+v, want one for the session", as)
	}

	// The transcript keeps every message, with the compaction line after
	// the messages it covers.
	lines := transcriptLines(t, project, "s1")
	var kinds []string
	var all strings.Builder
	for _, l := range lines {
		kinds = append(kinds, l.Type)
		if l.Message != nil {
			all.WriteString(l.Message.Content)
		}
		if l.Type == "compaction" && (l.Covered != 3 || !strings.HasPrefix(l.Summary, "SUMMARY:") || l.Usage == nil || l.Usage.OutputTokens != 20) {
			t.Errorf("compaction line = %+v", l)
		}
	}
	if got := strings.Join(kinds, " "); got != "conversation message message usage message message usage compaction message message usage message message usage" {
		t.Errorf("transcript line types: %s", got)
	}
	if !strings.Contains(all.String(), aText) || !strings.Contains(all.String(), "Read a.txt, b.txt and c.txt.") {
		t.Error("the transcript lost messages the summary covers")
	}

	// What the next Ask continues: the summary and the tail, from memory
	// and from the transcript alike.
	mem, err := r.m.History("s1", agents.Thread)
	if err != nil {
		t.Fatal(err)
	}
	file, err := newSessionLog(project).history("s1", agents.Thread)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string][]plugins.ChatMessage{"memory": mem, "transcript": file} {
		if len(h) != 6 || !strings.Contains(h[0].Content, "SUMMARY:") || h[2].ToolCallID != "c2" || h[5].Content != "All three read." {
			t.Errorf("%s history = %d messages %+v, want the summary and the five after it", name, len(h), h)
		}
	}
}

// A conversation continued over several Asks, compacted, continues from the
// summary; the transcript stays consistent for a new process.
func TestCompactionAcrossAsks(t *testing.T) {
	project := runtest.NewProject(t, nil)
	r := newCompactRig(t, project, 1000,
		modeltest.Turn{Text: "first answer", Usage: &modeltest.Usage{Input: 900, Output: 60}},
		modeltest.Turn{Text: "SUMMARY: asked one thing."},
		modeltest.Turn{Text: "second answer", Usage: &modeltest.Usage{Input: 300, Output: 5}},
		modeltest.Turn{Text: "third answer", Usage: &modeltest.Usage{Input: 320, Output: 5}},
	)
	r.ask(t, agents.Loom, "s2", "one")
	r.ask(t, agents.Loom, "s2", "two")
	r.ask(t, agents.Loom, "s2", "three")
	_, msgs := wireMessages(t, r.srv.Requests()[3])
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role+":"+firstWord(m.Text))
	}
	if got := strings.Join(roles, " "); got != "user:This assistant:first user:two assistant:second user:three" {
		t.Errorf("third Ask sent %s, want the summary, then the conversation since", got)
	}
	file, err := newSessionLog(project).history("s2", agents.Loom)
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := r.m.History("s2", agents.Loom)
	if len(file) != 6 || len(mem) != 6 || file[0].Content != mem[0].Content || file[5].Content != "third answer" {
		t.Errorf("history: transcript %d messages, memory %d; want the same 6", len(file), len(mem))
	}
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

// The provider refuses the chat as too long: the host compacts and retries
// once; a second refusal is the caller's error.
func TestCompactionOnContextTooLong(t *testing.T) {
	tooLong := modeltest.Turn{Status: 400, ErrorType: "context_length_exceeded", Error: "This model's maximum context length is 1000 tokens."}
	chat := plugins.ChatRequest{Messages: []plugins.ChatMessage{
		{Role: plugins.RoleUser, Content: "first question"},
		{Role: plugins.RoleAssistant, Content: "first answer"},
		{Role: plugins.RoleUser, Content: "second question"},
	}}
	t.Run("compact and retry", func(t *testing.T) {
		r := newCompactRig(t, runtest.NewProject(t, nil), 1000, tooLong, modeltest.Turn{Text: "SUMMARY: one question so far."}, modeltest.Turn{Text: "second answer"})
		resp, err := r.m.ModelFunc("s3", agents.Loom)(context.Background(), chat)
		if err != nil || resp.Message.Content != "second answer" {
			t.Fatalf("Complete() = %q, %v; want the answer after compaction", resp.Message.Content, err)
		}
		reqs := r.srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want refused, summary, retried", len(reqs))
		}
		_, msgs := wireMessages(t, reqs[2])
		if len(msgs) != 3 || !strings.Contains(msgs[0].Text, "SUMMARY: one question so far.") || msgs[1].Text != "first answer" || msgs[2].Text != "second question" {
			t.Errorf("retried request = %+v, want the summary then the tail", msgs)
		}
		ev, _ := r.hook.find(plugins.EventSessionCompacting)
		if ev.Data["reason"] != "context_too_long" {
			t.Errorf("session.compacting reason = %v", ev.Data["reason"])
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		r := newCompactRig(t, runtest.NewProject(t, nil), 1000,
			modeltest.Turn{Status: 400, Error: "prompt is too long: 1200 tokens > 1000 maximum"},
			modeltest.Turn{Text: "SUMMARY: one question so far."}, modeltest.Turn{Text: "second answer"})
		p, err := model.Open(config.ModelConfig{Provider: "anthropic", Name: "m", BaseURL: r.srv.URL}, func(string) string { return "k" })
		if err != nil {
			t.Fatal(err)
		}
		r.m.set = r.m.set.Wrap(func(model.Provider) model.Provider { return p })
		resp, err := r.m.ModelFunc("s3", agents.Loom)(context.Background(), chat)
		if err != nil || resp.Message.Content != "second answer" {
			t.Fatalf("Complete() = %q, %v; want the answer after compaction", resp.Message.Content, err)
		}
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := r.srv.Requests()[2].Decode(&body); err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range body.Messages {
			roles = append(roles, m.Role)
		}
		if strings.Join(roles, " ") != "user assistant user" || !strings.Contains(body.Messages[0].Content[0].Text, "SUMMARY: one question so far.") {
			t.Errorf("retried request = %+v, want the summary (a user message first) then the tail", body.Messages)
		}
	})
	t.Run("refused again", func(t *testing.T) {
		r := newCompactRig(t, runtest.NewProject(t, nil), 1000, tooLong, modeltest.Turn{Text: "SUMMARY."}, tooLong)
		_, err := r.m.ModelFunc("s4", agents.Loom)(context.Background(), chat)
		if !errors.Is(err, model.ErrContextTooLong) || len(r.srv.Requests()) != 3 {
			t.Errorf("Complete() = %v after %d requests; want the refusal after one retry", err, len(r.srv.Requests()))
		}
	})
	t.Run("blocked by a hook", func(t *testing.T) {
		r := newCompactRig(t, runtest.NewProject(t, nil), 1000, tooLong)
		r.hook.block = "keep everything"
		_, err := r.m.ModelFunc("s5", agents.Loom)(context.Background(), chat)
		if !errors.Is(err, model.ErrContextTooLong) || len(r.srv.Requests()) != 1 {
			t.Errorf("Complete() = %v after %d requests; want the refusal, no summary asked", err, len(r.srv.Requests()))
		}
		if _, ok := r.hook.find(plugins.EventSessionCompacted); ok {
			t.Error("session.compacted fired for a blocked compaction")
		}
	})
}

// Door.Compact compacts between turns, from memory or from the transcript
// of an earlier process.
func TestCompactOnDemand(t *testing.T) {
	project := runtest.NewProject(t, nil)
	r := newCompactRig(t, project, 100000,
		modeltest.Turn{Text: "The answer is 42."},
		modeltest.Turn{Text: "SUMMARY: asked for the answer; it is 42."},
		modeltest.Turn{Text: "It was 42."},
	)
	r.ask(t, agents.Loom, "s6", "What is the answer?")
	h := r.m
	if err := h.Compact(context.Background(), "s6", "Loom"); err != nil {
		t.Fatal(err)
	}
	hist, _ := r.m.History("s6", agents.Loom)
	if len(hist) != 2 || !strings.Contains(hist[0].Content, "it is 42") || hist[1].Content != "The answer is 42." {
		t.Errorf("history after /compact = %+v, want the summary and the last answer", hist)
	}
	ev, _ := r.hook.find(plugins.EventSessionCompacting)
	if ev.Data["trigger"] != CompactManual {
		t.Errorf("trigger = %v, want manual", ev.Data["trigger"])
	}
	r.ask(t, agents.Loom, "s6", "What was it?")
	_, msgs := wireMessages(t, r.srv.Requests()[2])
	if len(msgs) != 3 || !strings.Contains(msgs[0].Text, "it is 42") || msgs[2].Text != "What was it?" {
		t.Errorf("request after /compact = %+v", msgs)
	}
	file, _ := newSessionLog(project).history("s6", agents.Loom)
	if len(file) != 4 || !strings.Contains(file[0].Content, "it is 42") || file[3].Content != "It was 42." {
		t.Errorf("transcript history = %+v, want summary, answer, question, answer", file)
	}

	// A new process: the conversation comes from the transcript.
	r2 := newCompactRig(t, project, 100000, modeltest.Turn{Text: "SUMMARY: 42 twice."})
	if err := r2.m.Compact(context.Background(), "s6", agents.Loom); err != nil {
		t.Fatal(err)
	}
	_, msgs = wireMessages(t, r2.srv.Requests()[0])
	if !strings.Contains(msgs[0].Text, "it is 42") || !strings.Contains(msgs[0].Text, "What was it?") {
		t.Errorf("summary request of the new process = %.300q, want the earlier summary and the turn after", msgs[0].Text)
	}
	file, _ = newSessionLog(project).history("s6", agents.Loom)
	if len(file) != 2 || !strings.Contains(file[0].Content, "42 twice") || file[1].Content != "It was 42." {
		t.Errorf("history after the second compaction = %+v", file)
	}

	if err := h.Compact(context.Background(), "nobody", agents.Loom); err == nil || !strings.Contains(err.Error(), "no conversation") {
		t.Errorf("Compact(unknown session) = %v, want it to say there is no conversation", err)
	}
}

const compactPlan = "# Files\n\n## TODOs\n\n- [ ] 1. Write one.txt\n- [ ] 2. Write two.txt\n"

// A model agent working a plan task is compacted mid-task: the summary
// carries the plan's state, and the work goes on to the end of the plan.
func TestPlanRunSurvivesCompaction(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"files": compactPlan})
	p, err := plans.Find(project, "files")
	if err != nil {
		t.Fatal(err)
	}
	if err := plans.ProjectStore(project).Save(&plans.State{ActivePlan: p.Path, PlanName: "files"}); err != nil {
		t.Fatal(err)
	}
	r := newCompactRig(t, project, 2000,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "w1", Name: "write", Args: `{"path":"one.txt","content":"one"}`}}, Usage: &modeltest.Usage{Input: 500}},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "k1", Name: "plan_check", Args: `{"plan":"files","task":1}`}}, Usage: &modeltest.Usage{Input: 1000}},
		// The tick's answer crosses the ratio.
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "w2", Name: "write", Args: `{"path":"two.txt","content":"two"}`}}, Usage: &modeltest.Usage{Input: 1950}},
		modeltest.Turn{Text: "SUMMARY: task 1 written and ticked; writing two.txt for task 2."},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "k2", Name: "plan_check", Args: `{"plan":"files","task":2}`}}, Usage: &modeltest.Usage{Input: 600}},
		modeltest.Turn{Text: "Both tasks done."},
	)
	r.ask(t, agents.Tapestry, "run-1", "Execute the plan files: its tasks are 1. Write one.txt and 2. Write two.txt. Tick each with plan_check.")
	_, msgs := wireMessages(t, r.srv.Requests()[4])
	if !strings.Contains(msgs[0].Text, `Active plan "files": 1 of 2 tasks done. Next unchecked task: 2. Write two.txt`) {
		t.Errorf("summary message = %q, want the plan's state", msgs[0].Text)
	}
	if last := msgs[len(msgs)-1]; last.ToolCallID != "w2" {
		t.Errorf("request after compaction ends with %+v, want the write of two.txt's result", last)
	}
	for _, m := range msgs[1:] {
		if strings.Contains(m.Text, "Execute the plan") {
			t.Errorf("request after compaction still holds the first message: %+v", msgs)
		}
	}
	b, err := os.ReadFile(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "- [x] 1. Write one.txt") || !strings.Contains(string(b), "- [x] 2. Write two.txt") {
		t.Errorf("plan after the run:\n%s", b)
	}
	for _, f := range []string{"one.txt", "two.txt"} {
		if _, err := os.Stat(filepath.Join(project, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	as := runtest.Anchors(t, r.bus)
	if len(as) != 1 || as[0].Goal != "Plan files, task 2: Write two.txt" || as[0].Iteration != "1/2" {
		t.Errorf("anchors = %+v, want the plan at task 2, 1/2", as)
	}
}

// echoModel is an in-process provider that answers at once: a summary
// when asked for one, else a short answer costing what the request holds
// (four characters a token) against its window.
type echoModel struct {
	mu        sync.Mutex
	summaries int
}

func (e *echoModel) Complete(_ context.Context, req plugins.ChatRequest, _ func(model.Delta)) (plugins.ChatResponse, error) {
	if req.System == compactPrompt {
		e.mu.Lock()
		e.summaries++
		e.mu.Unlock()
		return plugins.ChatResponse{Message: plugins.ChatMessage{Role: plugins.RoleAssistant, Content: "SUMMARY: " + strings.Repeat("fact ", 50)}}, nil
	}
	in := estimateTokens(req.System, req.Messages, req.Tools)
	return plugins.ChatResponse{Message: plugins.ChatMessage{Role: plugins.RoleAssistant, Content: strings.Repeat("answer ", 30)},
		Usage: plugins.Usage{InputTokens: in, OutputTokens: 50}}, nil
}

// chatTurns has agent answer n person's messages in session, each turn
// continuing the conversation as Ask does, on m.
func chatTurns(tb testing.TB, m *Door, session string, n int) {
	complete := m.ModelFunc(session, agents.Loom)
	for i := range n {
		history, err := m.History(session, agents.Loom)
		if err != nil {
			tb.Fatal(err)
		}
		chat := plugins.ChatRequest{System: "You are terse.", Messages: append(history,
			plugins.ChatMessage{Role: plugins.RoleUser, Content: fmt.Sprintf("message %d: %s", i, strings.Repeat("text ", 60))})}
		if _, err := complete(context.Background(), chat); err != nil {
			tb.Fatal(err)
		}
	}
}

func newEchoService(project string, window int) (*Door, *echoModel) {
	cfg := config.Default()
	cfg.Model = config.ModelConfig{Provider: "openai", Name: "m", ContextWindow: window}
	m := New(Options{Project: project, Config: cfg, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "k" }})
	e := &echoModel{}
	m.set = m.set.Wrap(func(model.Provider) model.Provider { return e })
	return m, e
}

// However many turns a chat has, what the host keeps of it (and sends)
// stays within the window; the transcript keeps every turn.
func TestCompactionBoundsTheConversation(t *testing.T) {
	project := runtest.NewProject(t, nil)
	m, e := newEchoService(project, 4000)
	chatTurns(t, m, "long", 200)
	hist, err := m.History("long", agents.Loom)
	if err != nil {
		t.Fatal(err)
	}
	if got := estimateTokens("", hist, nil); got > 4000 {
		t.Errorf("after 200 turns the conversation holds %d tokens, more than the 4000 window", got)
	}
	if e.summaries < 5 {
		t.Errorf("%d compactions in 200 turns, want many", e.summaries)
	}
	lines := transcriptLines(t, project, "long")
	users := 0
	for _, l := range lines {
		if l.Message != nil && l.Message.Role == plugins.RoleUser && strings.HasPrefix(l.Message.Content, "message ") {
			users++
		}
	}
	if users != 200 {
		t.Errorf("the transcript holds %d of the 200 messages", users)
	}
	file, err := newSessionLog(project).history("long", agents.Loom)
	if err != nil {
		t.Fatal(err)
	}
	if len(file) != len(hist) || file[len(file)-1].Content != hist[len(hist)-1].Content {
		t.Errorf("read back: %d messages, memory %d; want the same", len(file), len(hist))
	}
}

// A Claude-style PreCompact command hook gets the compaction, with the
// transcript's path; context a hook adds steers the summary.
func TestCompactionReachesCommandHooks(t *testing.T) {
	project := runtest.NewProject(t, nil)
	cmds, err := hooks.CommandHooks([]hooks.CommandSpec{{Event: hooks.ClaudePreCompact,
		Command: `cat > "$CLAUDE_PROJECT_DIR/precompact.json"`}}, hooks.CommandOptions{ProjectDir: project})
	if err != nil {
		t.Fatal(err)
	}
	r := newCompactRigWith(t, project, 100000, cmds, modeltest.Turn{Text: "Done."}, modeltest.Turn{Text: "SUMMARY."})
	r.hook.context = "Keep every file path."
	r.ask(t, agents.Loom, "s7", "Do it.")
	if err := r.m.Compact(context.Background(), "s7", agents.Loom); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(project, "precompact.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Event      string `json:"hook_event_name"`
		Session    string `json:"session_id"`
		Transcript string `json:"transcript_path"`
		Trigger    string `json:"trigger"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	if in.Event != "PreCompact" || in.Session != "s7" || in.Trigger != "manual" || in.Transcript != filepath.Join(project, ".weave", "sessions", "s7.jsonl") {
		t.Errorf("PreCompact input = %+v", in)
	}
	_, msgs := wireMessages(t, r.srv.Requests()[1])
	if !strings.Contains(msgs[0].Text, "Keep every file path.") {
		t.Errorf("summary request = %q, want the hook's words as instructions", msgs[0].Text)
	}
}

// Asked for while the agent is answering, the compaction happens before its
// next model call, as asked for.
func TestCompactWhileAnswering(t *testing.T) {
	project := runtest.NewProject(t, nil)
	writeFile(t, project, "a.txt", "alpha")
	hold := make(chan struct{})
	r := newCompactRig(t, project, 100000,
		modeltest.Turn{Text: "Reading a.txt.", ToolCalls: []modeltest.ToolCall{{ID: "r1", Name: "read", Args: `{"path":"a.txt"}`}}, Hold: hold},
		modeltest.Turn{Text: "SUMMARY: reading a.txt."},
		modeltest.Turn{Text: "It says alpha."},
	)
	first := make(chan struct{})
	var once sync.Once
	stop := r.m.Observe(func(ev Event) {
		if ev.Type == ModelDelta {
			once.Do(func() { close(first) })
		}
	})
	defer stop()
	go func() {
		<-first
		if err := r.m.Compact(context.Background(), "s8", agents.Loom); err != nil {
			t.Errorf("Compact() while answering = %v", err)
		}
		close(hold)
	}()
	if resp := r.ask(t, agents.Loom, "s8", "What does a.txt say?"); resp.Output != "It says alpha." {
		t.Fatalf("answer = %q", resp.Output)
	}
	ev, ok := r.hook.find(plugins.EventSessionCompacting)
	if !ok || ev.Data["trigger"] != CompactManual || ev.Data["reason"] != "requested" {
		t.Errorf("session.compacting = %+v, want a manual compaction", ev)
	}
	_, msgs := wireMessages(t, r.srv.Requests()[2])
	if len(msgs) != 3 || !strings.Contains(msgs[0].Text, "SUMMARY: reading a.txt.") || msgs[2].ToolCallID != "r1" {
		t.Errorf("request after the compaction = %+v, want the summary, the call and its result", msgs)
	}
}

// toolsPlanSnapshot reads the work state through tl, as the host's Plans
// func does.
func toolsPlanSnapshot(tl *tools.Tools) func(session string) PlanSnapshot {
	return func(session string) PlanSnapshot {
		var s PlanSnapshot
		if p, err := tl.Progress(""); err == nil && p.Total > 0 {
			s.Plan = &p
		}
		s.Todos = tl.Todos(session)
		return s
	}
}
