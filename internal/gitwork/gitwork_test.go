package gitwork_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/gitwork"
)

func repo(t *testing.T) *gitwork.Repo {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "T"}, {"config", "user.email", "t@example.com"},
	} {
		git(t, dir, args...)
	}
	write(t, dir, "a.txt", "one\ntwo\nthree\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "base")
	r, err := gitwork.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// task runs one task in a worktree of its own: it writes files there and
// commits them with the task's trailers.
func task(t *testing.T, r *gitwork.Repo, n int, base string, files map[string]string) string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(r.Root, ".weave", "worktrees", "p", "w1")
	branch := "weave/p-task-" + string(rune('0'+n))
	if err := r.Worktree(ctx, dir, branch, base); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		write(t, dir, name, body)
	}
	write(t, dir, ".weave/state.json", "{}")
	sha, err := r.Commit(ctx, dir, "task title", []gitwork.Trailer{{gitwork.TrailerPlan, "p"}, {gitwork.TrailerTask, string(rune('0' + n))}, {gitwork.TrailerAttempt, "a1"}})
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

func TestLandRebaseConflictRevert(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	base, _, _ := r.Head(ctx)
	if _, err := r.BranchAt(ctx, "weave/p", base, false); err != nil {
		t.Fatal(err)
	}
	c1 := task(t, r, 1, base, map[string]string{"b.txt": "b\n"})
	c2 := task(t, r, 2, base, map[string]string{"a.txt": "one\nTWO\nthree\n"})
	c3 := task(t, r, 3, base, map[string]string{"a.txt": "one\nzwei\nthree\n"})

	head := base
	for _, c := range []string{c1, c2} {
		landed, err := r.Land(ctx, head, c, gitwork.LandRebase)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.UpdateRef(ctx, "refs/heads/weave/p", landed, head); err != nil {
			t.Fatal(err)
		}
		head = landed
	}
	// The swap fails when the branch moved since.
	if err := r.UpdateRef(ctx, "refs/heads/weave/p", c3, base); err == nil {
		t.Fatal("update-ref from a stale head succeeded")
	}
	_, err := r.Land(ctx, head, c3, gitwork.LandRebase)
	var ce *gitwork.ConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Files, []string{"a.txt"}) {
		t.Fatalf("landing a conflicting task: %v, want a conflict in a.txt", err)
	}
	if got := git(t, r.Root, "show", "weave/p:a.txt"); got != "one\nTWO\nthree\n" {
		t.Fatalf("a.txt on the branch: %q", got)
	}
	if out := git(t, r.Root, "ls-tree", "-r", "--name-only", "weave/p"); slices.Contains([]string{out}, ".weave/state.json") {
		t.Fatal("a .weave file entered a task's commit")
	}
	commits, err := r.TaskCommits(ctx, "weave/p", base, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(commits) != 2 || commits[0].Task != 2 || commits[1].Task != 1 || commits[0].Attempt != "a1" {
		t.Fatalf("task commits: %+v", commits)
	}
	rev, err := r.Revert(ctx, head, commits[0].SHA, []gitwork.Trailer{{gitwork.TrailerPlan, "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRef(ctx, "refs/heads/weave/p", rev, head); err != nil {
		t.Fatal(err)
	}
	if got := git(t, r.Root, "show", "weave/p:a.txt"); got != "one\ntwo\nthree\n" {
		t.Fatalf("a.txt after the revert: %q", got)
	}
	commits, _ = r.TaskCommits(ctx, "weave/p", base, "p")
	if len(commits) != 3 || commits[0].Reverts != c2Landed(t, r, base) {
		t.Fatalf("after revert: %+v", commits)
	}
	if dirty, err := r.Dirty(ctx, nil); err != nil || len(dirty) != 0 {
		t.Fatalf("main tree dirty after the run: %v %v", dirty, err)
	}
}

func c2Landed(t *testing.T, r *gitwork.Repo, base string) string {
	commits, _ := r.TaskCommits(context.Background(), "weave/p~1", base, "p")
	return commits[0].SHA
}

// TestWorktreeRewrittenGitFile is a task that pointed its worktree's .git
// at the main tree's repository: reusing the worktree must not check the
// task's branch out over the person's, nor commit there.
func TestWorktreeRewrittenGitFile(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	base, branch, _ := r.Head(ctx)
	dir := filepath.Join(r.Root, ".weave", "worktrees", "p", "w1")
	if err := r.Worktree(ctx, dir, "weave/p-task-1", base); err != nil {
		t.Fatal(err)
	}
	write(t, dir, ".git", "gitdir: "+filepath.Join(r.Root, ".git")+"\n")
	if err := r.Worktree(ctx, dir, "weave/p-task-2", base); err != nil {
		t.Fatal(err)
	}
	if _, now, _ := r.Head(ctx); now != branch {
		t.Fatalf("the main tree's branch is %q after reusing the worktree, want %q", now, branch)
	}
	if got := strings.TrimSpace(git(t, dir, "symbolic-ref", "--short", "HEAD")); got != "weave/p-task-2" {
		t.Fatalf("worktree on %q", got)
	}
	if out := git(t, dir, "rev-parse", "--absolute-git-dir"); !strings.Contains(out, filepath.Join(".git", "worktrees")) {
		t.Fatalf("worktree's git dir %q is not a linked worktree's", out)
	}
}
