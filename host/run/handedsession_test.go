package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

// sessionHook records the session events it hears; failStart makes it fail
// on session.start.
type sessionHook struct {
	failStart bool
	mu        sync.Mutex
	events    []plugins.Event
	// heard is signalled with mu as an event is recorded.
	heard *sync.Cond
}

func newSessionHook(failStart bool) *sessionHook {
	h := &sessionHook{failStart: failStart}
	h.heard = sync.NewCond(&h.mu)
	return h
}

func (h *sessionHook) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "sessions", Kind: plugins.KindHook, Events: []string{plugins.EventSessionStart, plugins.EventSessionEnd, plugins.EventPlanTaskDone}}, nil
}

func (h *sessionHook) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.heard.Broadcast()
	h.mu.Unlock()
	if h.failStart && ev.Name == plugins.EventSessionStart {
		return plugins.Decision{}, errors.New("the guard died")
	}
	return plugins.Decision{Action: plugins.Allow}, nil
}

// names are the events heard so far.
func (h *sessionHook) names() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.events {
		out = append(out, ev.Name)
	}
	return out
}

// withSessionHook gives h the hook rec with policy fail, its closed
// failures halting h as the host's do.
func withSessionHook(t *testing.T, h *HandedHost, rec *sessionHook, fail hooks.FailPolicy) {
	t.Helper()
	info, _ := rec.Info(context.Background())
	var mu sync.Mutex
	var halt error
	pipeline, err := hooks.NewPipeline([]hooks.Registered{{Hook: rec, Info: info, Fail: fail}}, hooks.Options{
		OnFailClosed: func(ev plugins.Event, rep hooks.Report) {
			mu.Lock()
			defer mu.Unlock()
			if halt == nil {
				halt = fmt.Errorf("hook %s failed on %s: %s", rep.Hook, ev.Name, rep.Error)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Hooks = pipeline
	h.Halted = func() error { mu.Lock(); defer mu.Unlock(); return halt }
}

// TestHandedSessionSpansItsTasks: a worker's hooks hear session.start
// before the first task of a session it runs, with the task's plan, task
// and session, and session.end once none of the session's tasks runs there
// any more: a task ending beside another of its session still running does
// not end the session under it (the built-in hooks forget a session on
// session.end). A session ended starts anew with its next task. The plan's
// own events never fire on a worker. Before, a handed task fired none.
func TestHandedSessionSpansItsTasks(t *testing.T) {
	h, repo, base := handedWorld(t, nil)
	rec := newSessionHook(false)
	withSessionHook(t, h, rec, hooks.FailOpen)
	gate := filepath.Join(t.TempDir(), "go")
	body := plan(task(1, "Slow", "while [ ! -f "+gate+" ]; do sleep 0.01; done; echo one > one.txt", ""),
		task(2, "Quick", "echo two > two.txt", ""), task(3, "Later", "echo three > three.txt", ""))
	ctx := context.Background()
	slow := make(chan error, 1)
	go func() {
		_, err := h.Run(ctx, handedTask(t, repo, base, body, 1, 1))
		slow <- err
	}()
	rec.mu.Lock()
	for len(rec.events) == 0 {
		rec.heard.Wait()
	}
	rec.mu.Unlock()
	if _, err := h.Run(ctx, handedTask(t, repo, base, body, 2, 2)); err != nil {
		t.Fatalf("task 2: %v", err)
	}
	if got := rec.names(); !slices.Equal(got, []string{plugins.EventSessionStart}) {
		t.Fatalf("events while task 1 still runs = %v; want the one session.start, no end under it", got)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-slow:
		if err != nil {
			t.Fatalf("task 1: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("task 1 never ended")
	}
	if _, err := h.Run(ctx, handedTask(t, repo, base, body, 3, 1)); err != nil {
		t.Fatalf("task 3: %v", err)
	}
	want := []string{plugins.EventSessionStart, plugins.EventSessionEnd, plugins.EventSessionStart, plugins.EventSessionEnd}
	if got := rec.names(); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	first, last := rec.events[0], rec.events[3]
	if first.SessionID != "s1" || first.Plan != "p" || first.Task == nil || first.Task.Number != 1 || !strings.HasSuffix(first.Cwd, filepath.Join(".weave", "worktrees", "w1")) {
		t.Errorf("session.start = %+v; want session s1, plan p, task 1, in its worktree", first)
	}
	if last.Task == nil || last.Task.Number != 3 || last.Data["reason"] != "done" {
		t.Errorf("the last session.end = %+v; want task 3's, reason done", last)
	}
}

// TestHandedSessionClosedHookFailureStops: a hook whose failure policy is
// closed that fails on a task's session.start stops the task before
// anything of it runs, naming the hook, as it stops a run; the session
// still ends.
func TestHandedSessionClosedHookFailureStops(t *testing.T) {
	h, repo, base := handedWorld(t, nil)
	rec := newSessionHook(true)
	withSessionHook(t, h, rec, hooks.FailClosed)
	body := plan(task(1, "Write one", "echo one > one.txt", ""))
	tk := handedTask(t, repo, base, body, 1, 1)
	out, err := h.Run(context.Background(), tk)
	if err == nil || !strings.Contains(err.Error(), "hook sessions failed on session.start") {
		t.Fatalf("Run = %+v, %v; want it stopped by the failed hook", out, err)
	}
	if _, serr := os.Stat(filepath.Join(tk.Dir, "one.txt")); serr == nil {
		t.Error("the task's block ran past a failed closed hook")
	}
	if got := rec.names(); !slices.Equal(got, []string{plugins.EventSessionStart, plugins.EventSessionEnd}) {
		t.Errorf("events = %v; want session.start then session.end", got)
	}
}

// TestHandedTaskDropsALinkedWeaveDir: a coordinator's code whose .weave is
// a link to a folder of the worker's machine loses the link before the
// task runs; nothing in the folder it led to is touched (the task keeps
// only the skills of a .weave/ that is a folder of the code).
func TestHandedTaskDropsALinkedWeaveDir(t *testing.T) {
	h, repo, _ := handedWorld(t, nil)
	ctx := context.Background()
	outside := t.TempDir()
	for _, name := range []string{"config.yaml", "keep.txt"} {
		if err := os.WriteFile(filepath.Join(outside, name), []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := repo.Git(ctx, "", "rm", "-q", "-r", ".weave"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(repo.Root, ".weave")); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Git(ctx, "", "add", "-f", ".weave"); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Git(ctx, "", "commit", "-q", "-m", "linked"); err != nil {
		t.Fatal(err)
	}
	base, _, _ := repo.Head(ctx)
	// The worktrees live elsewhere: the repository's own .weave is the
	// link.
	tk := handedTask(t, repo, base, plan(task(1, "Write one", "echo one > one.txt", "")), 1, 1)
	tk.Dir = filepath.Join(t.TempDir(), "w1")
	if _, err := h.Run(ctx, tk); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, name := range []string{"config.yaml", "keep.txt"} {
		if b, err := os.ReadFile(filepath.Join(outside, name)); err != nil || string(b) != "mine\n" {
			t.Errorf("%s of the folder the link led to: %q, %v; want it untouched", name, b, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(tk.Dir, ".weave")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the worktree's .weave: %v, %v; want the task's own folder, not the link", fi, err)
	}
}
