package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus"
)

// BenchmarkStartWorkInProcess runs a 1,000-task runbook plan of `true`
// blocks through StartWork, for profiling the per-task overhead.
func BenchmarkStartWorkInProcess(b *testing.B) {
	const tasks = 1000
	var sb strings.Builder
	sb.WriteString("# Bench\n\n## TODOs\n\n")
	for i := 1; i <= tasks; i++ {
		fmt.Fprintf(&sb, "- [ ] %d. Task %d\n  ```sh\n  true\n  ```\n", i, i)
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, ".weave", "plans"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".weave", "plans", "bench.md"), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := StartWork(context.Background(), Options{Project: dir, Name: "bench"})
		if err != nil || res.Status != StatusDone {
			b.Fatalf("StartWork = %v, %v", res.Status, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tasks), "ns/task")
}

// BenchmarkLoopObserverTask is the cost a task event adds to a run: one
// STATE validated and published on the memory bus.
func BenchmarkLoopObserverTask(b *testing.B) {
	m, _ := bus.NewMemory(bus.DefaultOptions())
	defer m.Close()
	obs := LoopObserver(context.Background(), m, b.TempDir(), nil, nil)
	obs(pausedRun[0])
	ev := pausedRun[1]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		obs(ev)
	}
}
