package main

import (
	"context"
	"syscall"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

// benchBash makes bash tool calls of `true` as Loom through the gate, with
// sandbox.mode mode. The sandbox's init is this test binary, which links
// what weave links, so its start costs what weave's does.
func benchBash(b *testing.B, mode string) {
	dir := b.TempDir()
	cfg := config.Default()
	cfg.Sandbox.Mode = mode
	g, err := tools.NewGate(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	t, err := tools.New(dir, cfg, g, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if m, unavailable := t.SandboxStatus(ctx); m != "off" && unavailable != nil {
		b.Skipf("no sandbox on this machine: %v", unavailable)
	}
	call := plugins.ToolCall{Tool: plugins.ToolBash, Args: map[string]any{"command": "true"}}
	// CPU time, this process's and its children's (the init's, which
	// holds the command's), is reported beside the wall time: on a loaded
	// machine the wall time is mostly waiting for a CPU, and a sandboxed
	// call has more processes to wait for.
	before := usedCPU()
	for b.Loop() {
		res, err := t.Call(ctx, tools.Caller{Agent: "loom"}, "s", call)
		if err != nil || res.IsError {
			b.Fatalf("bash true = %+v, %v", res, err)
		}
	}
	b.ReportMetric(float64(usedCPU()-before)/float64(b.N), "cpu-ns/op")
}

// usedCPU is the CPU time used so far by this process and its waited-for
// children, in nanoseconds.
func usedCPU() int64 {
	var total int64
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err == nil {
			total += ru.Utime.Nano() + ru.Stime.Nano()
		}
	}
	return total
}

// BenchmarkBashSandboxed is a bash tool call in the sandbox (sandbox.mode
// auto on a machine that has one).
func BenchmarkBashSandboxed(b *testing.B) { benchBash(b, "auto") }

// BenchmarkBashUnsandboxed is the same call without it (sandbox.mode off):
// the floor the sandbox's cost (at most 15 ms more) is measured against.
func BenchmarkBashUnsandboxed(b *testing.B) { benchBash(b, "off") }
