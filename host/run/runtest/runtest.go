// Package runtest helps tests of start-work runs: a project with plans, and
// what a run published on the bus.
package runtest

import (
	"context"
	"os"
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/internal/layout"
)

// NewProject makes a project with the given plans (name -> markdown) in
// .weave/plans.
func NewProject(t testing.TB, planFiles map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(layout.NewProject(dir).Plans(), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range planFiles {
		WritePlan(t, dir, name, body)
	}
	return dir
}

// WritePlan writes (or replaces) the plan called name in project.
func WritePlan(t testing.TB, project, name, body string) {
	t.Helper()
	if err := os.WriteFile(layout.NewProject(project).Plan(name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// RecordLoop subscribes to loop:current and returns what arrives.
func RecordLoop(t testing.TB, b bus.Bus) *bustest.Recorder {
	t.Helper()
	rec := bustest.Processed()
	if _, err := b.Subscribe(context.Background(), loop.TopicCurrent, rec.Handle, bus.SubscribeOptions{Name: "status"}); err != nil {
		t.Fatal(err)
	}
	return rec
}

// Anchors reads loop:anchor from the start.
func Anchors(t testing.TB, b bus.Bus) []loop.Anchor {
	t.Helper()
	var out []loop.Anchor
	err := b.Replay(context.Background(), loop.TopicAnchor, 1, func(_ uint64, m bus.Message) bool {
		a, err := loop.DecodeAnchor(m.Payload)
		if err != nil {
			t.Fatalf("loop.DecodeAnchor(%s) = %v", m.Payload, err)
		}
		out = append(out, a)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
