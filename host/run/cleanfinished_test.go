package run

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/weavehq/weave/internal/gitwork"
)

// TestCleanFinishedKeepsCheckedOutBranch: a finished plan's task branches
// go, all in one transaction, but one that a worktree outside the run's
// has checked out is kept, as git branch -D keeps it; the branches of
// another plan and the config are left alone.
func TestCleanFinishedKeepsCheckedOutBranch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "T"}, {"config", "user.email", "t@example.com"},
		{"commit", "-q", "--allow-empty", "-m", "start"}} {
		gitRun(t, dir, args...)
	}
	for _, b := range []string{"weave/p-task-1", "weave/p-task-2", "weave/p-task-3", "weave/q-task-1"} {
		gitRun(t, dir, "branch", b)
	}
	looking := filepath.Join(t.TempDir(), "looking")
	gitRun(t, dir, "worktree", "add", "-q", looking, "weave/p-task-2")
	config := gitRun(t, dir, "config", "--list", "--local")
	repo, err := gitwork.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	cleanFinished(ctx, repo, filepath.Join(dir, ".weave", "worktrees", "p"), "weave/p", slog.New(slog.NewTextHandler(io.Discard, nil)))
	got := gitRun(t, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads/weave/")
	if want := "weave/p-task-2\nweave/q-task-1"; got != want {
		t.Fatalf("branches left:\n%s\nwant:\n%s", got, want)
	}
	if after := gitRun(t, dir, "config", "--list", "--local"); after != config {
		t.Fatalf("the config changed:\n%s\nwas:\n%s", after, config)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "logs", "refs", "heads", "weave", "p-task-1")); !os.IsNotExist(err) {
		t.Fatalf("the deleted branch's reflog is left: %v", err)
	}
}

// TestCleanFinishedDeletesTheRestAroundAHeldBranch: one task branch's lock
// is held, so the transaction fails; the others are still deleted one by
// one, and a symbolic ref among them goes without what it names.
func TestCleanFinishedDeletesTheRestAroundAHeldBranch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "T"}, {"config", "user.email", "t@example.com"},
		{"commit", "-q", "--allow-empty", "-m", "start"}} {
		gitRun(t, dir, args...)
	}
	for _, b := range []string{"weave/p-task-1", "weave/p-task-2", "keep"} {
		gitRun(t, dir, "branch", b)
	}
	gitRun(t, dir, "symbolic-ref", "refs/heads/weave/p-task-3", "refs/heads/keep")
	if err := os.WriteFile(filepath.Join(dir, ".git", "refs", "heads", "weave", "p-task-2.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := gitwork.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	cleanFinished(ctx, repo, filepath.Join(dir, ".weave", "worktrees", "p"), "weave/p", slog.New(slog.NewTextHandler(io.Discard, nil)))
	got := gitRun(t, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads/")
	if want := "keep\nmain\nweave/p-task-2"; got != want {
		t.Fatalf("branches left:\n%s\nwant:\n%s", got, want)
	}
}
