package gitwork_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/gitwork"
)

// TestOnBranchReadsOnlyWhatGitWrote: the worktree as Worktree made it is
// on its branch at its base; a task that committed, switched branches or
// pointed .git elsewhere is not, and GitDir and Commit say what git says.
func TestOnBranchReadsOnlyWhatGitWrote(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	base, _, _ := r.Head(ctx)
	dir := filepath.Join(r.Root, ".weave", "worktrees", "p", "w1")
	if err := r.Worktree(ctx, dir, "weave/p-task-1", base); err != nil {
		t.Fatal(err)
	}
	gitDir, err := r.GitDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(git(t, dir, "rev-parse", "--absolute-git-dir")); gitDir != want {
		t.Fatalf("GitDir = %q, git says %q", gitDir, want)
	}
	if !r.OnBranch(ctx, dir, gitDir, "weave/p-task-1", base) {
		t.Fatal("a fresh worktree is not on its branch at its base")
	}
	if r.OnBranch(ctx, dir, gitDir, "weave/p-task-2", base) {
		t.Fatal("OnBranch says yes for another branch")
	}

	// A task that committed by itself moved the branch.
	write(t, dir, "x.txt", "x\n")
	git(t, dir, "add", "x.txt")
	git(t, dir, "commit", "-q", "-m", "by the task")
	if r.OnBranch(ctx, dir, gitDir, "weave/p-task-1", base) {
		t.Fatal("OnBranch says yes after the task committed on the branch")
	}
	// A task that switched to another branch.
	git(t, dir, "checkout", "-q", "-b", "elsewhere", base)
	if r.OnBranch(ctx, dir, gitDir, "weave/p-task-1", base) {
		t.Fatal("OnBranch says yes on another branch")
	}
	git(t, dir, "checkout", "-q", "-B", "weave/p-task-1", base)
	if !r.OnBranch(ctx, dir, gitDir, "weave/p-task-1", base) {
		t.Fatal("back on the branch at its base, OnBranch says no")
	}
	// A task that pointed .git at the main tree's repository.
	write(t, dir, ".git", "gitdir: "+filepath.Join(r.Root, ".git")+"\n")
	if r.OnBranch(ctx, dir, gitDir, "weave/p-task-1", base) {
		t.Fatal("OnBranch says yes for a .git pointing at the main repository")
	}
	if err := os.Remove(filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	if r.OnBranch(ctx, dir, gitDir, "weave/p-task-1", base) {
		t.Fatal("OnBranch says yes without a .git")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}

	// Commit names the commit git made, read from the branch's file.
	if err := r.Worktree(ctx, dir, "weave/p-task-2", base); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "y.txt", "y\n")
	sha, err := r.Commit(ctx, dir, "task two", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(git(t, dir, "rev-parse", "HEAD")); sha != want {
		t.Fatalf("Commit = %s, HEAD is %s", sha, want)
	}
	if gitDir, err = r.GitDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if !r.OnBranch(ctx, dir, gitDir, "weave/p-task-2", sha) {
		t.Fatal("after the commit, OnBranch does not see the branch at it")
	}
	// A packed branch (no loose file) cannot be read: OnBranch says no.
	git(t, r.Root, "pack-refs", "--all")
	if r.OnBranch(ctx, dir, gitDir, "weave/p-task-2", sha) {
		t.Fatal("OnBranch says yes for a packed ref it cannot read")
	}
}

// TestLandWithKnownLine: a base the caller vouches for is not asked of
// git, one it does not is, and a base off the line is refused either way
// when the caller does not vouch for it.
func TestLandWithKnownLine(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	base, _, _ := r.Head(ctx)
	c1 := task(t, r, 1, base, map[string]string{"b.txt": "b\n"})
	c2 := task(t, r, 2, base, map[string]string{"c.txt": "c\n"})
	// c1 lands by fast-forward; c2 on top of it.
	l1, err := r.LandWith(ctx, base, c1, gitwork.LandRebase, gitwork.LandOptions{OnLine: func(s string) bool { return s == base }})
	if err != nil || l1 != c1 {
		t.Fatalf("fast-forward landing = %s, %v; want %s", l1, err, c1)
	}
	asked := map[string]bool{}
	l2, err := r.LandWith(ctx, l1, c2, gitwork.LandRebase, gitwork.LandOptions{OnLine: func(s string) bool { asked[s] = true; return s == base }})
	if err != nil {
		t.Fatal(err)
	}
	if !asked[base] {
		t.Error("OnLine was not asked about the task's base")
	}
	if got := git(t, r.Root, "log", "--format=%P", "-1", l2); strings.TrimSpace(got) != l1 {
		t.Fatalf("landed commit's parent = %q, want %s", got, l1)
	}
	for _, f := range []string{"b.txt", "c.txt"} {
		if _, err := r.Git(ctx, "", "cat-file", "-e", l2+":"+f); err != nil {
			t.Errorf("%s missing from the landed tree", f)
		}
	}
	// The copy keeps the task's message and author, byte for byte.
	if a, b := git(t, r.Root, "log", "-1", "--format=%B%an%ae%ad", c2), git(t, r.Root, "log", "-1", "--format=%B%an%ae%ad", l2); a != b {
		t.Errorf("landed commit says %q, the task's %q", b, a)
	}
	// A task whose base is off the integration line is refused when the
	// caller does not vouch for it.
	git(t, r.Root, "checkout", "-q", "-b", "side", base)
	write(t, r.Root, "side.txt", "s\n")
	git(t, r.Root, "add", "side.txt")
	git(t, r.Root, "commit", "-q", "-m", "side")
	side := strings.TrimSpace(git(t, r.Root, "rev-parse", "HEAD"))
	c3 := task(t, r, 3, side, map[string]string{"d.txt": "d\n"})
	if _, err := r.LandWith(ctx, l2, c3, gitwork.LandRebase, gitwork.LandOptions{OnLine: func(s string) bool { return s == base }}); err == nil || !strings.Contains(err.Error(), "not on the integration branch") {
		t.Fatalf("landing a task based off the line: %v, want a refusal", err)
	}
	var ce *gitwork.ConflictError
	if _, err := r.Land(ctx, l2, c3, gitwork.LandRebase); err == nil || errors.As(err, &ce) {
		t.Fatalf("Land of a task based off the line: %v, want a refusal", err)
	}
}
