package hooks

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/weavehq/weave/plugins"
)

// BenchmarkPipelineRoundTrip measures one event through N in-process hooks:
// ordering, a timeout per hook, decision aggregation and argument copies.
func BenchmarkPipelineRoundTrip(b *testing.B) {
	for _, n := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			var regs []Registered
			for i := range n {
				regs = append(regs, reg(fmt.Sprintf("h%02d", i), i, func(context.Context, plugins.Event) (plugins.Decision, error) {
					return plugins.Decision{Action: plugins.Allow}, nil
				}, plugins.EventToolExecuteBefore))
			}
			p, err := NewPipeline(regs, Options{})
			if err != nil {
				b.Fatal(err)
			}
			ev := toolEvent(map[string]any{"command": "go test ./..."})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				out, err := p.Run(ctx, ev)
				if err != nil || out.Action != plugins.Allow {
					b.Fatalf("Run() = %v, %v", out.Action, err)
				}
			}
		})
	}
}

// BenchmarkBuiltinGuards measures a Pattern write through every built-in
// hook, path resolution included.
func BenchmarkBuiltinGuards(b *testing.B) {
	project := b.TempDir()
	p, err := NewPipeline(BuiltinHooks(BuiltinConfig{Plans: &memPlans{}}), Options{})
	if err != nil {
		b.Fatal(err)
	}
	ev := plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: "s", Agent: "pattern", Cwd: project, Tool: plugins.ToolWrite,
		Args: map[string]any{"path": filepath.Join(".weave", "plans", "new.md"), "content": "x"}}
	b.ReportAllocs()
	for b.Loop() {
		out, err := p.Run(context.Background(), ev)
		if err != nil || out.Blocked() {
			b.Fatalf("Run() = %s %q, %v", out.Action, out.Reason, err)
		}
	}
}

// BenchmarkCommandHook measures a command hook: sh, JSON in, JSON out.
func BenchmarkCommandHook(b *testing.B) {
	h, err := NewCommandHook(CommandSpec{Name: "c", Event: ClaudePreToolUse, Command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`},
		CommandOptions{ProjectDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewPipeline([]Registered{h.Registered()}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ev := toolEvent(map[string]any{"command": "ls"})
	for b.Loop() {
		out, err := p.Run(context.Background(), ev)
		if err != nil || out.Action != plugins.Allow || out.Reports[0].Error != "" {
			b.Fatalf("Run() = %+v, %v", out, err)
		}
	}
}
