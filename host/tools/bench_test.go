package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

func benchTools(b *testing.B) *Tools {
	b.Helper()
	dir := b.TempDir()
	if err := writeBenchFile(filepath.Join(dir, "f.go"), strings.Repeat("package main // line\n", 100)); err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	g, err := NewGate(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	p, err := hooks.NewPipeline(nil, hooks.Options{})
	if err != nil {
		b.Fatal(err)
	}
	t, err := New(dir, cfg, g, p)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// BenchmarkToolCallThroughGate is a read of a 100-line file through the
// gate and an empty hook pipeline, as an agent's call arrives.
func BenchmarkToolCallThroughGate(b *testing.B) {
	t := benchTools(b)
	call := plugins.ToolCall{Tool: plugins.ToolRead, Args: map[string]any{"path": "f.go"}}
	c := Caller{Agent: "thread", Chain: []string{"loom", "thread"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := t.Call(ctx, c, "s", call)
		if err != nil || res.IsError {
			b.Fatalf("Call = %+v, %v", res, err)
		}
	}
}

// BenchmarkToolCallDirect is the same read without the gate and hooks: the
// floor the gate's cost is measured against.
func BenchmarkToolCallDirect(b *testing.B) {
	t := benchTools(b)
	args := map[string]any{"path": "f.go"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := t.read(args)
		if err != nil || res.IsError {
			b.Fatalf("read = %+v, %v", res, err)
		}
	}
}

// BenchmarkGateCheck is the gate's decision alone, for a scoped write.
func BenchmarkGateCheck(b *testing.B) {
	dir := b.TempDir()
	g, err := NewGate(nil, nil, GateProject(dir))
	if err != nil {
		b.Fatal(err)
	}
	call := plugins.ToolCall{Tool: plugins.ToolWrite, Args: map[string]any{"path": ".weave/plans/p.md"}}
	c := Caller{Agent: "pattern", Chain: []string{"loom", "pattern"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Check(ctx, c, call); err != nil {
			b.Fatal(err)
		}
	}
}

func writeBenchFile(path, body string) error {
	return os.WriteFile(path, []byte(body), 0o644)
}
