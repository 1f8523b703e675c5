package host

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/model/modeltest"
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

// BenchmarkModelCallThroughHost is the same call through the host's model
// service: chat.message hooks before and after (the built-ins that listen),
// an observer, and the session transcript.
func BenchmarkModelCallThroughHost(b *testing.B) {
	srv := benchServer(b)
	cfg := config.Default()
	cfg.Model = config.ModelConfig{Provider: "openai", Name: "m", BaseURL: srv.OpenAIURL()}
	dir := b.TempDir()
	var regs []hooks.Registered
	for _, r := range hooks.BuiltinHooks(BuiltinHookConfig(dir, cfg)) {
		if slices.Contains(r.Info.Events, plugins.EventChatMessage) {
			regs = append(regs, r)
		}
	}
	pipeline, err := hooks.NewPipeline(regs, hooks.Options{})
	if err != nil {
		b.Fatal(err)
	}
	m := newModelService(dir, cfg, pipeline, nil, slog.New(slog.DiscardHandler), func(string) string { return "" })
	defer m.observe(func(ModelEvent) {})()
	complete := m.funcFor("bench", "loom")
	b.ResetTimer()
	for range b.N {
		if _, err := complete(context.Background(), benchChat()); err != nil {
			b.Fatal(err)
		}
	}
}
