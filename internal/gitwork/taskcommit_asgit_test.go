package gitwork

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The cases below are where git commit would write something else, or
// refuse: the commit written without git must then be git's, or refused.

// gitCommitIn commits the index of w by git commit as Commit's fallback does.
func gitCommitIn(t *testing.T, w, msg string) string {
	t.Helper()
	gitIn(t, w, "", "add", "-A", "--", ".", ":(exclude).weav[e]", ":(exclude).weav[e]/**")
	cmd := exec.Command("git", "-c", "maintenance.auto=false", "commit", "-q", "--allow-empty", "--no-verify", "-F", "-")
	cmd.Dir, cmd.Stdin = w, strings.NewReader(msg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
	return gitIn(t, w, "", "rev-parse", "HEAD")
}

// Per-worktree config (extensions.worktreeConfig): git commit in the task's
// worktree reads it, the in-process commit reads only the main tree's.
func TestTaskCommitReadsWorktreeConfig(t *testing.T) {
	ctx := context.Background()
	r, _, w1, w2 := taskRepo(t)
	gitIn(t, r.Root, "", "config", "extensions.worktreeConfig", "true")
	for _, w := range []string{w1, w2} {
		gitIn(t, w, "", "config", "--worktree", "user.name", "Worktree Person")
		gitIn(t, w, "", "config", "--worktree", "i18n.commitEncoding", "ISO-8859-1")
		writeFile(t, filepath.Join(w, "out.txt"), "x\n")
	}
	mine, err := r.Commit(ctx, w1, "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs := gitCommitIn(t, w2, Message("s", nil))
	got, want := catCommit(t, r.Root, mine), catCommit(t, r.Root, theirs)
	if identTime.ReplaceAllString(got, "$1 T") != identTime.ReplaceAllString(want, "$1 T") {
		t.Fatalf("commit written here\n%s\ngit commit writes\n%s", got, want)
	}
}

// includeIf onbranch: config git commit reads on the task's branch, not on
// the main tree's.
func TestTaskCommitConditionalConfigAsGit(t *testing.T) {
	ctx := context.Background()
	r, _, w1, w2 := taskRepo(t)
	extra := filepath.Join(t.TempDir(), "extra")
	if err := os.WriteFile(extra, []byte("[user]\n\tname = Branch Person\n[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, r.Root, "", "config", "includeIf.onbranch:slot-*.path", extra)
	writeFile(t, filepath.Join(w1, "out.txt"), "x\n")
	writeFile(t, filepath.Join(w2, "out.txt"), "x\n")
	// git commit in the worktree signs there, with gpg.program=false: it
	// fails, and so must the task's commit.
	gitIn(t, w2, "", "add", "-A")
	cmd := exec.Command("git", "commit", "-q", "--allow-empty", "--no-verify", "-m", "s")
	cmd.Dir = w2
	out, gerr := cmd.CombinedOutput()
	if gerr == nil {
		t.Fatalf("git commit signed with gpg.program=false: %s", out)
	}
	if mine, err := r.Commit(ctx, w1, "s", nil); err == nil {
		t.Fatalf("the task's commit %s was written unsigned where git commit refuses:\n%s", mine, catCommit(t, r.Root, mine))
	}
}

// A merge in progress in the task's worktree (git merge --no-commit):
// git commit makes a merge commit and clears MERGE_HEAD.
func TestTaskCommitFinishesAMergeAsGit(t *testing.T) {
	ctx := context.Background()
	r, base, w1, w2 := taskRepo(t)
	gitIn(t, r.Root, "", "checkout", "-q", "-b", "other", base)
	writeFile(t, filepath.Join(r.Root, "o.txt"), "o\n")
	gitIn(t, r.Root, "", "add", "o.txt")
	gitIn(t, r.Root, "", "commit", "-q", "-m", "other")
	for _, w := range []string{w1, w2} {
		gitIn(t, w, "", "merge", "-q", "--no-commit", "--no-ff", "other")
	}
	mine, err := r.Commit(ctx, w1, "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs := gitCommitIn(t, w2, Message("s", nil))
	gp := gitIn(t, r.Root, "", "rev-list", "--parents", "-n1", theirs)
	mp := gitIn(t, r.Root, "", "rev-list", "--parents", "-n1", mine)
	if len(strings.Fields(gp)) != len(strings.Fields(mp)) {
		_, merr := os.Stat(filepath.Join(gitIn(t, w1, "", "rev-parse", "--absolute-git-dir"), "MERGE_HEAD"))
		t.Fatalf("git commit: parents %s; here: %s (MERGE_HEAD left behind here: %v)", gp, mp, merr == nil)
	}
}

// A hook installed after the first task's commit: the cached setup skips it.
func TestTaskCommitRunsAHookAddedLater(t *testing.T) {
	ctx := context.Background()
	r, _, w1, _ := taskRepo(t)
	writeFile(t, filepath.Join(w1, "one.txt"), "1\n")
	if _, err := r.Commit(ctx, w1, "one", nil); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "ran")
	hook := filepath.Join(r.Root, ".git", "hooks", "post-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(w1, "two.txt"), "2\n")
	if _, err := r.Commit(ctx, w1, "two", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("post-commit installed after the first commit did not run for the second: %v", err)
	}
}

// A tracked file turned into a directory holding untracked files: is it
// left by the reset that skips git clean?
func TestResetWorktreeFileBecameDir(t *testing.T) {
	ctx := context.Background()
	r, base, w1, _ := taskRepo(t)
	if err := os.Remove(filepath.Join(w1, "a.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(w1, "a.txt", "left.txt"), "left\n")
	err := r.ResetWorktree(ctx, w1, "slot-1", base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(w1, "a.txt", "left.txt")); err == nil {
		t.Fatal("untracked file left")
	}
}

// The parent's gitlink at a path vouches, in known(), for a blob of the same
// name at that path: a forged index entry (assume-unchanged keeps git add
// from fixing it) makes a tree naming a blob the repository lacks, where
// git commit refuses ("invalid object").
func TestTaskCommitGitlinkVouchesForNoBlob(t *testing.T) {
	ctx := context.Background()
	r, _, w1, w2 := taskRepo(t)
	const x = "1111111111111111111111111111111111111111"
	gitIn(t, r.Root, "", "update-index", "--add", "--cacheinfo", "160000,"+x+",sub")
	gitIn(t, r.Root, "", "commit", "-q", "-m", "with gitlink")
	base := gitIn(t, r.Root, "", "rev-parse", "HEAD")
	for i, w := range []string{w1, w2} {
		gitIn(t, w, "", "checkout", "-q", "-B", []string{"slot-1", "slot-2"}[i], base)
		gitIn(t, w, "", "update-index", "--cacheinfo", "100644,"+x+",sub")
		gitIn(t, w, "", "update-index", "--assume-unchanged", "sub")
	}
	mine, err := r.Commit(ctx, w1, "s", nil)
	gitIn(t, w2, "", "add", "-A")
	cmd := exec.Command("git", "commit", "-q", "--allow-empty", "--no-verify", "-m", "s")
	cmd.Dir = w2
	out, gerr := cmd.CombinedOutput()
	if err == nil && gerr != nil {
		fsck, _ := exec.Command("git", "-C", r.Root, "fsck", "--no-dangling").CombinedOutput()
		t.Fatalf("committed here %s (ls-tree: %s); git commit: %v %s; fsck after update-ref: %s", mine,
			gitIn(t, r.Root, "", "ls-tree", mine, "sub"), gerr, out, fsck)
	}
}

// git commit appends to the worktree's HEAD reflog (and the branch's with
// "commit: <subject>"); the in-process commit moves only the branch.
func TestTaskCommitHeadReflog(t *testing.T) {
	ctx := context.Background()
	r, _, w1, w2 := taskRepo(t)
	for _, w := range []string{w1, w2} {
		writeFile(t, filepath.Join(w, "out.txt"), "x\n")
	}
	mine, err := r.Commit(ctx, w1, "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs := gitCommitIn(t, w2, Message("s", nil))
	h1 := gitIn(t, w1, "", "reflog", "-1", "--format=%H %gs", "HEAD")
	h2 := gitIn(t, w2, "", "reflog", "-1", "--format=%H %gs", "HEAD")
	b1 := gitIn(t, w1, "", "reflog", "-1", "--format=%H %gs", "slot-1")
	b2 := gitIn(t, w2, "", "reflog", "-1", "--format=%H %gs", "slot-2")
	if !strings.HasPrefix(h1, mine) || !strings.HasPrefix(b1, mine) || !strings.HasPrefix(h2, theirs) {
		t.Fatalf("HEAD reflog here: %q (commit %s); by git: %q; branch reflog here %q, by git %q (commit %s)", h1, mine, h2, b1, b2, theirs)
	}
}
