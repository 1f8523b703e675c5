package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/host/run"
)

func TestPipedStatusIsPlainTSV(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan, "計画": okPlan})
	r := runBin(t, nil, "", "--dir", dir, "status")
	if r.code != 0 {
		t.Fatalf("status = %d %q", r.code, r.err)
	}
	if strings.ContainsAny(r.out, "█░\x1b") {
		t.Errorf("piped status has bars or escapes:\n%q", r.out)
	}
	for _, want := range []string{"ok\t0\t2\tidle\t\t\n", "計画\t0\t2\tidle\t\t\n"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("piped status = %q, want the TSV line %q", r.out, want)
		}
	}
}

func TestColorFlagAndNoColor(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	if err := os.WriteFile(filepath.Join(dir, ".weave", "plans", "done.md"), []byte("# D\n\n- [x] 1. Done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runBin(t, nil, "", "--dir", dir, "--color=always", "status"); !strings.Contains(r.out, "\x1b[") {
		t.Errorf("status --color=always = %q, want colour", r.out)
	}
	if r := runBin(t, []string{"CLICOLOR_FORCE=1", "NO_COLOR=1"}, "", "--dir", dir, "status"); strings.Contains(r.out, "\x1b[") {
		t.Errorf("status with NO_COLOR = %q, want no colour", r.out)
	}
	if r := runBin(t, nil, "", "--dir", dir, "--color=sometimes", "status"); r.code != exitUsage || !strings.Contains(r.err, "auto, always, never") {
		t.Errorf("--color=sometimes = %d %q, want a usage error listing the modes", r.code, r.err)
	}

	// On a terminal: bars of one width, and colour unless NO_COLOR.
	for _, tc := range []struct {
		noColor string
		color   bool
	}{{"", true}, {"1", false}} {
		t.Setenv("NO_COLOR", tc.noColor)
		t.Setenv("XDG_CONFIG_HOME", t.TempDir())
		var out bytes.Buffer
		code := runArgs(context.Background(), &Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out, Terminal: true, Width: 80}, []string{"--dir", dir, "status"})
		if code != 0 || !strings.Contains(out.String(), bar(0, 2)) || !strings.Contains(out.String(), bar(1, 1)) {
			t.Errorf("terminal status = %d %q, want %d-cell bars", code, out.String(), barWidth)
		}
		if got := strings.Contains(out.String(), "\x1b["); got != tc.color {
			t.Errorf("terminal status with NO_COLOR=%q coloured = %v, want %v:\n%q", tc.noColor, got, tc.color, out.String())
		}
	}
}

func TestWidthsInCells(t *testing.T) {
	dir := project(t, map[string]string{"wide": "# 計画です\n\n- [ ] 1. 日本語のタスク名がとても長い場合\n  ```sh\n  true\n  ```\n"})
	r := runBin(t, nil, "", "--dir", dir, "plan", "show", "wide")
	if !strings.Contains(r.out, "計画です\n========\n") || strings.Contains(r.out, "░") {
		t.Errorf("piped plan show = %s, want the wide title underlined in cells (8) and no bar", r.out)
	}
	if got := clip("日本語のタスク", 7); cellWidth(got) > 7 || !strings.HasSuffix(got, "…") {
		t.Errorf("clip(wide, 7) = %q (%d cells), want at most 7 cells ending in …", got, cellWidth(got))
	}
}

// The live view keeps a failed block's last lines on screen, and its last
// frame is printed once, cleanly, after the panel is gone.
func TestLiveViewKeepsFailedOutputAndEndsWithACleanFrame(t *testing.T) {
	var out syncBuffer
	v := newLiveView(&Streams{Out: &out, Terminal: true, Width: 80}, 5)
	now := time.Now()
	v.Observe(run.Event{Type: run.EventPlanStarted, Plan: "demo", Total: 2, Time: now})
	v.Observe(run.Event{Type: run.EventTaskStarted, Plan: "demo", Task: 1, Title: "Build", Total: 2, Time: now})
	v.Observe(run.Event{Type: run.EventTaskOutput, Plan: "demo", Task: 1, Output: "compiling"})
	v.Observe(run.Event{Type: run.EventTaskOutput, Plan: "demo", Task: 1, Output: "error: missing semicolon"})
	v.Observe(run.Event{Type: run.EventTaskFailed, Plan: "demo", Task: 1, Title: "Build", Total: 2, Error: "exited with status 1", Time: now})
	v.Observe(run.Event{Type: run.EventPlanPaused, Plan: "demo", Total: 2, Reason: "task 1 failed", Time: now})
	v.Close()
	got := out.String()
	if !strings.Contains(got, "│ error: missing semicolon") || !strings.Contains(got, "✗ 1. Build: exited with status 1") {
		t.Errorf("live view output lacks the failed block's last lines:\n%q", got)
	}
	if !strings.HasSuffix(got, "\r\x1b[Kdemo  "+bar(0, 2)+" 0/2  paused: task 1 failed\n") {
		t.Errorf("live view did not end with a clean last frame:\n%q", got)
	}
}

// syncBuffer is a buffer that a program's goroutine and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
