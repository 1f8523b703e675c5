package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/run/runtest"
)

func TestFailingAttemptsBackOff(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Bad", "echo run >> runs.txt", "false"))})
	cfg := config.Default()
	cfg.Runbook.Retries = 4
	var waits []time.Duration
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg,
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusFailed {
		t.Fatalf("status = %s, want failed", res.Status)
	}
	b, _ := os.ReadFile(filepath.Join(project, "runs.txt"))
	if got := strings.Count(string(b), "run"); got != 5 {
		t.Errorf("the task ran %d times, want 5 (4 retries)", got)
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Errorf("waits between attempts (-want +got):\n%s", diff)
	}
}

func TestInterruptDuringBackoffPauses(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Bad", "echo run >> runs.txt", "false"))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := StartWork(ctx, Options{Project: project, Name: "p",
		Sleep: func(ctx context.Context, _ time.Duration) error { cancel(); <-ctx.Done(); return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusPaused {
		t.Errorf("status after Ctrl-C during the backoff = %s (%v), want paused", res.Status, res.Err)
	}
	b, _ := os.ReadFile(filepath.Join(project, "runs.txt"))
	if got := strings.Count(string(b), "run"); got != 1 {
		t.Errorf("the task ran %d times, want 1: no attempt after the interrupt", got)
	}
}

func TestRetryBackoffIsBounded(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: 250 * time.Millisecond, 3: time.Second, 7: 10 * time.Second, 1000: 10 * time.Second} {
		if got := RetryBackoff(attempt); got != want {
			t.Errorf("RetryBackoff(%d) = %v, want %v", attempt, got, want)
		}
	}
}
