package chat_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

func benchChat() plugins.ChatRequest {
	return plugins.ChatRequest{System: "You are terse.", Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "hi"}}}
}

func benchServer(b *testing.B) *modeltest.Server {
	srv := modeltest.NewServer(b)
	for range b.N {
		srv.Add(modeltest.Turn{Text: "ok then", Usage: &modeltest.Usage{Input: 10, Output: 2}})
	}
	return srv
}

// BenchmarkModelCallDirect is the floor: one streamed call to a fake model
// that answers at once, through the provider alone.
func BenchmarkModelCallDirect(b *testing.B) {
	srv := benchServer(b)
	p, err := model.Open(config.ModelConfig{Provider: "openai", Name: "m", BaseURL: srv.OpenAIURL()}, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := p.Complete(context.Background(), benchChat(), func(model.Delta) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkModelCallThroughHost is the same call through the model door:
// chat.message hooks before and after (the built-ins that listen),
// an observer, and the session transcript.
func BenchmarkModelCallThroughHost(b *testing.B) {
	srv := benchServer(b)
	cfg := config.Default()
	cfg.Model = config.ModelConfig{Provider: "openai", Name: "m", BaseURL: srv.OpenAIURL()}
	dir := b.TempDir()
	var regs []hooks.Registered
	for _, r := range hooks.BuiltinHooks(host.BuiltinHookConfig(dir, cfg)) {
		if slices.Contains(r.Info.Events, plugins.EventChatMessage) {
			regs = append(regs, r)
		}
	}
	pipeline, err := hooks.NewPipeline(regs, hooks.Options{})
	if err != nil {
		b.Fatal(err)
	}
	m := chat.New(chat.Options{Project: dir, Config: cfg, Pipeline: pipeline, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
	defer m.Observe(func(chat.Event) {})()
	complete := m.ModelFunc("bench", "loom")
	b.ResetTimer()
	for range b.N {
		if _, err := complete(context.Background(), benchChat()); err != nil {
			b.Fatal(err)
		}
	}
}

// timedProvider counts the time spent in the provider, so that what the
// host adds around it can be told apart.
type timedProvider struct {
	model.Provider
	ns atomic.Int64
}

func (p *timedProvider) Complete(ctx context.Context, req plugins.ChatRequest, onDelta func(model.Delta)) (plugins.ChatResponse, error) {
	start := time.Now()
	defer func() { p.ns.Add(int64(time.Since(start))) }()
	return p.Provider.Complete(ctx, req, onDelta)
}

// stepsPerRequest is how many tool-calling steps one agent request of
// BenchmarkAgentStep takes before its answer.
const stepsPerRequest = 10

// BenchmarkAgentStep is one step of an agent's loop (ns/op) through the host, with
// a fake model that answers at once: the model call (chat.message hooks,
// the stream to an observer, the transcript, the compaction check) and the
// tool call it asks for (a read, through the capability gate and the tool
// hooks), with the built-in hooks. host-ns/op is the step without the
// model's round trip: what the host adds per tool call.
func BenchmarkAgentStep(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a small file\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	srv := modeltest.NewServer(b)
	// b.N steps in all: requests of stepsPerRequest steps, the last one
	// with what remains.
	requests := (b.N + stepsPerRequest - 1) / stepsPerRequest
	for r := range requests {
		for range min(stepsPerRequest, b.N-r*stepsPerRequest) {
			srv.Add(modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "read", Args: `{"path":"a.txt"}`}}, Usage: &modeltest.Usage{Input: 100, Output: 5}})
		}
		srv.Add(modeltest.Turn{Text: "done", Usage: &modeltest.Usage{Input: 100, Output: 1}})
	}
	cfg := config.Default()
	cfg.Model = config.ModelConfig{Provider: "openai", Name: "m", BaseURL: srv.OpenAIURL()}
	logger := slog.New(slog.DiscardHandler)
	pipeline, err := hooks.NewPipeline(hooks.BuiltinHooks(host.BuiltinHookConfig(dir, cfg)), hooks.Options{})
	if err != nil {
		b.Fatal(err)
	}
	m := chat.New(chat.Options{Project: dir, Config: cfg, Pipeline: pipeline, Logger: logger, Getenv: func(string) string { return "" }})
	var timed *timedProvider
	m.WrapProvider(func(p model.Provider) model.Provider {
		timed = &timedProvider{Provider: p}
		return timed
	})
	defer m.Observe(func(chat.Event) {})()
	gate, err := tools.NewGate(cfg, logger)
	if err != nil {
		b.Fatal(err)
	}
	tl, err := tools.New(dir, cfg, gate, pipeline, tools.WithModel(m.ModelFunc), tools.WithLogger(logger))
	if err != nil {
		b.Fatal(err)
	}
	role, _ := agents.RoleByName(agents.Thread)
	agent := agents.NewModelAgent(role, agents.Overrides{})
	services := tl.Services(tools.Caller{Agent: role.Name}, "bench", tools.Scope{}, logger)
	b.ResetTimer()
	start := time.Now()
	for range requests {
		resp, err := agent.Handle(context.Background(), services, plugins.AgentRequest{SessionID: "bench", Prompt: "read a.txt, again and again"})
		if err != nil || resp.Error != "" {
			b.Fatal(err, resp.Error)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	// ns/op is one step: b.N steps ran.
	steps := float64(b.N)
	b.ReportMetric(float64(elapsed-time.Duration(timed.ns.Load()))/steps, "host-ns/op")
	b.ReportMetric(float64(timed.ns.Load())/steps, "model-ns/step")
}
