package chat

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/plugins"
)

// recordingHook records chat.message events and answers from its fields.
type recordingHook struct {
	mu     sync.Mutex
	events []plugins.Event
	// onUser is the decision on the user message "hello" (any, to block);
	// onAnswer the one on answers.
	onUser, onAnswer plugins.Decision
}

func (h *recordingHook) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "test.recorder", Kind: plugins.KindHook, Events: []string{plugins.EventChatMessage}}, nil
}

func (h *recordingHook) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
	if ev.Data["source"] == "assistant" {
		return h.onAnswer, nil
	}
	if ev.Message != "hello" && h.onUser.Action != plugins.Block {
		return plugins.Decision{}, nil
	}
	return h.onUser, nil
}

func newTestModelService(t *testing.T, srv *modeltest.Server, hook *recordingHook) *Door {
	t.Helper()
	info, _ := hook.Info(context.Background())
	p, err := hooks.NewPipeline([]hooks.Registered{{Hook: hook, Info: info}}, hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Model = config.ModelConfig{Provider: "anthropic", Name: "m", BaseURL: srv.URL, ContextWindow: 1000}
	return New(Options{Project: t.TempDir(), Config: cfg, Pipeline: p, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
}

func TestModelServiceFiresChatMessageAndCarriesContext(t *testing.T) {
	srv := modeltest.NewServer(t,
		modeltest.Turn{Text: "first", Usage: &modeltest.Usage{Input: 700, Output: 50, CacheRead: 100}},
		modeltest.Turn{Text: "second"})
	hook := &recordingHook{
		onUser:   plugins.Decision{Action: plugins.Modify, Text: "hello, rewritten"},
		onAnswer: plugins.Decision{Action: plugins.Allow, Context: "Context window 85% full."},
	}
	m := newTestModelService(t, srv, hook)
	var mu sync.Mutex
	var seen []Event
	stop := m.Observe(func(ev Event) { mu.Lock(); seen = append(seen, ev); mu.Unlock() })
	defer stop()

	complete := m.ModelFunc("s1", "loom")
	chat := plugins.ChatRequest{Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "hello"}}}
	if _, err := complete(context.Background(), chat); err != nil {
		t.Fatal(err)
	}
	chat.Messages = append(chat.Messages, plugins.ChatMessage{Role: plugins.RoleAssistant, Content: "first"},
		plugins.ChatMessage{Role: plugins.RoleUser, Content: "go on"})
	if _, err := complete(context.Background(), chat); err != nil {
		t.Fatal(err)
	}

	ev := hook.events
	if len(ev) != 4 {
		t.Fatalf("%d chat.message events, want 4 (user, answer, user, answer)", len(ev))
	}
	if ev[0].Message != "hello" || ev[0].Data["source"] != "user" || ev[0].SessionID != "s1" || ev[0].Agent != "loom" {
		t.Errorf("first event = %+v, want the user's message in s1 as loom", ev[0])
	}
	if ev[1].Message != "first" || ev[1].Data["tokens_used"] != int64(850) || ev[1].Data["context_window"] != 1000 {
		t.Errorf("answer event = %+v, want its text, 850 tokens used of 1000", ev[1])
	}
	var first, second struct {
		Messages []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"messages"`
	}
	reqs := srv.Requests()
	if err := reqs[0].Decode(&first); err != nil {
		t.Fatal(err)
	}
	if got := first.Messages[0].Content[0].Text; got != "hello, rewritten" {
		t.Errorf("first request's message = %q, want the hook's rewrite", got)
	}
	if err := reqs[1].Decode(&second); err != nil {
		t.Fatal(err)
	}
	last := second.Messages[len(second.Messages)-1].Content[0].Text
	if !strings.Contains(last, "go on") || !strings.Contains(last, "<system-reminder>\nContext window 85% full.") {
		t.Errorf("second request's last message = %q, want the context the answer's hooks added", last)
	}
	mu.Lock()
	defer mu.Unlock()
	var deltas strings.Builder
	usage := 0
	for _, e := range seen {
		switch e.Type {
		case ModelDelta:
			deltas.WriteString(e.Text)
		case ModelUsage:
			usage++
		}
	}
	if deltas.String() != "firstsecond" || usage != 2 {
		t.Errorf("observed text %q and %d usage events, want both answers streamed and 2", deltas.String(), usage)
	}
}

func TestModelServiceBlockedMessageAndNoModel(t *testing.T) {
	srv := modeltest.NewServer(t)
	hook := &recordingHook{onUser: plugins.Decision{Action: plugins.Block, Reason: "no secrets in prompts"}}
	m := newTestModelService(t, srv, hook)
	_, err := m.ModelFunc("s", "loom")(context.Background(), plugins.ChatRequest{Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "my password is x"}}})
	if err == nil || !strings.Contains(err.Error(), "no secrets in prompts") {
		t.Errorf("Complete() error = %v, want the hook's reason", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests reached the model, want none", n)
	}

	none := New(Options{Project: "", Config: config.Default(), Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
	if _, err := none.ModelFunc("s", "loom")(context.Background(), plugins.ChatRequest{}); err == nil || !strings.Contains(err.Error(), "model.provider") {
		t.Errorf("no model: error = %v, want one naming model.provider", err)
	}
}

// TestDoorPublishesOnTheModelTopic: a session's model events go to its
// model topic, and none to session:<id>, the envelope faces' log.
func TestDoorPublishesOnTheModelTopic(t *testing.T) {
	b, err := bus.NewMemory(bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	onSession := make(chan bus.Message, 16)
	if _, err := b.Subscribe(context.Background(), "session:*", func(_ context.Context, m bus.Message) (bus.Ack, error) {
		onSession <- m
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan Event, 16)
	if _, err := b.Subscribe(context.Background(), bus.ModelTopic("s9"), func(_ context.Context, m bus.Message) (bus.Ack, error) {
		var ev Event
		if err := json.Unmarshal(m.Payload, &ev); err != nil {
			return bus.Ack{}, err
		}
		got <- ev
		return bus.Ack{Processed: true}, nil
	}, bus.SubscribeOptions{}); err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "one two", ToolCalls: []modeltest.ToolCall{{ID: "t1", Name: "read", Args: `{"path":"a"}`}}})
	cfg := config.Default()
	cfg.Model = config.ModelConfig{Provider: "openai", Name: "m", BaseURL: srv.OpenAIURL()}
	m := New(Options{Project: "", Config: cfg, Bus: b, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
	if _, err := m.ModelFunc("s9", "thread")(context.Background(), plugins.ChatRequest{Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	var types []string
	var text strings.Builder
	for len(types) < 4 {
		select {
		case ev := <-got:
			types = append(types, ev.Type)
			text.WriteString(ev.Text)
			if ev.Agent != "thread" || ev.Session != "s9" {
				t.Errorf("event %+v, want thread in s9", ev)
			}
		case <-time.After(time.Minute):
			t.Fatalf("bus events so far %v, want 4", types)
		}
	}
	if strings.Join(types, " ") != "model.delta model.delta model.tool_call model.usage" || text.String() != "one two" {
		t.Errorf("bus events %v with text %q, want two deltas, the tool call and the usage", types, text.String())
	}
	// A marker published on session:s9 after the call arrives after
	// anything the call published there.
	if _, err := b.Publish(context.Background(), bus.Message{Topic: "session:s9", Payload: []byte(`{"type":"marker"}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-onSession:
		if !strings.Contains(string(m.Payload), "marker") {
			t.Errorf("session:s9 got %s, want no model event there", m.Payload)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the marker never reached session:*")
	}
}

func TestHistoryContinuesFromMemoryAndFromTheTranscript(t *testing.T) {
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "first answer"})
	m := newTestModelService(t, srv, &recordingHook{})
	chat := plugins.ChatRequest{Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "remember the word heron"}}}
	if _, err := m.ModelFunc("s1", "loom")(context.Background(), chat); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func() ([]plugins.ChatMessage, error){
		"memory":     func() ([]plugins.ChatMessage, error) { return m.History("s1", "loom") },
		"transcript": func() ([]plugins.ChatMessage, error) { return m.sessions.history("s1", "loom") },
	} {
		got, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Content != "remember the word heron" || got[1].Role != plugins.RoleAssistant || got[1].Content != "first answer" {
			t.Errorf("%s history = %+v, want the question and its answer", name, got)
		}
	}
	if got, _ := m.History("s1", "thread"); len(got) != 0 {
		t.Errorf("another agent's history = %+v, want none", got)
	}
}
