package host

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

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
	pipeline, err := hooks.NewPipeline(hooks.BuiltinHooks(BuiltinHookConfig(dir, cfg)), hooks.Options{})
	if err != nil {
		b.Fatal(err)
	}
	m := newModelService(dir, cfg, pipeline, nil, logger, func(string) string { return "" })
	timed := &timedProvider{Provider: m.provider}
	m.provider = timed
	defer m.observe(func(ModelEvent) {})()
	gate, err := tools.NewGate(cfg, logger)
	if err != nil {
		b.Fatal(err)
	}
	tl, err := tools.New(dir, cfg, gate, pipeline, tools.WithModel(m.funcFor), tools.WithLogger(logger))
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

// BenchmarkSessionMemory reports the heap a chat session holds in the host
// (retained-B) after so many turns, compactions included: bounded by the
// model's window, not by the number of turns.
func BenchmarkSessionMemory(b *testing.B) {
	for _, turns := range []int{100, 1000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			var retained uint64
			for range b.N {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				m, _ := newEchoService(b.TempDir(), 8000)
				chatTurns(b, m, "mem", turns)
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(m)
				if after.HeapAlloc > before.HeapAlloc {
					retained += after.HeapAlloc - before.HeapAlloc
				}
			}
			b.ReportMetric(float64(retained)/float64(b.N), "retained-B")
		})
	}
}
