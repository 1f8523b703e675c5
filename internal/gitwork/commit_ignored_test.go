package gitwork_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/gitwork"
)

// TestCommitWithWeaveIgnored: in a project that ignores .weave/ (and yet
// tracks a file there), a task whose worktree has a .weave/ of its own (a
// worker's copy of the plan) and that deletes the tracked file there is
// still committed: its work goes in, nothing under .weave/ does, the
// tracked file's deletion included.
func TestCommitWithWeaveIgnored(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	write(t, r.Root, ".gitignore", "/.weave/\n")
	write(t, r.Root, ".weave/plans/kept.md", "# Kept\n")
	git(t, r.Root, "add", ".gitignore")
	git(t, r.Root, "add", "-f", ".weave/plans/kept.md")
	git(t, r.Root, "commit", "-q", "-m", "ignore .weave")
	base, _, _ := r.Head(ctx)
	dir := filepath.Join(t.TempDir(), "w1")
	if err := r.Worktree(ctx, dir, "weave/p-task-1", base); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, ".weave")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, ".weave/plans/p.md", "# P\n")
	write(t, dir, "out.txt", "work\n")
	sha, err := r.Commit(ctx, dir, "task", []gitwork.Trailer{{gitwork.TrailerPlan, "p"}, {gitwork.TrailerTask, "1"}, {gitwork.TrailerAttempt, "a1"}})
	if err != nil {
		t.Fatalf("commit with .weave/ ignored: %v", err)
	}
	changed := strings.Fields(git(t, r.Root, "diff-tree", "--no-commit-id", "--name-only", "-r", sha))
	if len(changed) != 1 || changed[0] != "out.txt" {
		t.Fatalf("the task's commit changes %v, want out.txt alone", changed)
	}
}
