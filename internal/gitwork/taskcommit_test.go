package gitwork

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var identTime = regexp.MustCompile(`(?m)^((?:author|committer) .*>) \d+ [-+]\d{4}$`)

// taskRepo is a repository whose base has nested directories, an
// executable and a link, and two worktrees of it on branches of their own.
func taskRepo(t *testing.T) (r *Repo, base, w1, w2 string) {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "", "init", "-q", "-b", "main")
	gitIn(t, dir, "", "config", "user.name", "Task Er")
	gitIn(t, dir, "", "config", "user.email", "task@example.com")
	for name, body := range map[string]string{"a.txt": "a\n", "a/x": "x\n", "a-b": "ab\n", "b/c/d": "d\n", "gone.txt": "g\n", ".gitignore": "/.weave/\n*.log\n"} {
		writeFile(t, filepath.Join(dir, name), body)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "", "add", "-A")
	gitIn(t, dir, "", "commit", "-q", "-m", "base")
	base = gitIn(t, dir, "", "rev-parse", "HEAD")
	r = &Repo{Root: dir}
	ctx := context.Background()
	w1, w2 = filepath.Join(t.TempDir(), "w1"), filepath.Join(t.TempDir(), "w2")
	if err := r.Worktree(ctx, w1, "slot-1", base); err != nil {
		t.Fatal(err)
	}
	if err := r.Worktree(ctx, w2, "slot-2", base); err != nil {
		t.Fatal(err)
	}
	return r, base, w1, w2
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTaskCommitAsGitCommit commits the same work in two worktrees, once
// here and once by git commit, with subjects and trailers of many shapes:
// the trees are the same, the commits the same but for their times, the
// branch moved onto the commit, and git fsck --strict reads it.
func TestTaskCommitAsGitCommit(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		subject  string
		trailers []Trailer
	}{
		{"Write the file", []Trailer{{TrailerPlan, "p"}, {TrailerTask, "1"}, {TrailerSession, "s-1"}, {TrailerAttempt, "a1"}}},
		{"  spaced \t title ", []Trailer{{TrailerPlan, "p"}, {TrailerSession, ""}, {TrailerAttempt, " "}}},
		{"ü ☃ 𝄞", nil},
		{"", []Trailer{{TrailerTask, "2"}}},
	}
	for _, c := range cases {
		r, base, w1, w2 := taskRepo(t)
		for _, w := range []string{w1, w2} {
			writeFile(t, filepath.Join(w, "a", "x"), "changed\n")
			writeFile(t, filepath.Join(w, "new", "deep", "f.txt"), "new\n")
			writeFile(t, filepath.Join(w, "b", "c", "e"), "e\n")
			writeFile(t, filepath.Join(w, ".weave", "plans", "p.md"), "# P\n")
			writeFile(t, filepath.Join(w, "build.log"), "ignored\n")
			if err := os.Remove(filepath.Join(w, "gone.txt")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(w, "a.txt"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		log := gitLog(t)
		mine, err := r.Commit(ctx, w1, c.subject, c.trailers)
		if err != nil {
			t.Fatal(err)
		}
		if calls := ran(t, log); slices.Contains(calls, "commit") || slices.Contains(calls, "update-ref") {
			t.Fatalf("the task's commit ran git %v", calls)
		}
		gitIn(t, w2, "", "add", "-A", "--", ".", ":(exclude).weav[e]", ":(exclude).weav[e]/**")
		cmd := exec.Command("git", "commit", "-q", "--allow-empty", "--no-verify", "-F", "-")
		cmd.Dir, cmd.Stdin = w2, strings.NewReader(Message(c.subject, c.trailers))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git commit: %v\n%s", err, out)
		}
		theirs := gitIn(t, w2, "", "rev-parse", "HEAD")
		got, want := catCommit(t, r.Root, mine), catCommit(t, r.Root, theirs)
		if identTime.ReplaceAllString(got, "$1 T") != identTime.ReplaceAllString(want, "$1 T") {
			t.Fatalf("%q: commit written here\n%q\ngit commit writes\n%q", c.subject, got, want)
		}
		if head := gitIn(t, w1, "", "rev-parse", "HEAD"); head != mine {
			t.Fatalf("%q: the worktree's HEAD is %s, the commit %s", c.subject, head, mine)
		}
		if reflog := gitIn(t, r.Root, "", "reflog", "show", "--format=%H %gs", "slot-1"); !strings.HasPrefix(reflog, mine+" weave: commit\n") {
			t.Fatalf("%q: the branch's reflog:\n%s", c.subject, reflog)
		}
		if locks, _ := filepath.Glob(filepath.Join(r.Root, ".git", "refs", "heads", "*.lock")); len(locks) > 0 {
			t.Fatalf("%q: lock files left: %v", c.subject, locks)
		}
		if parent := gitIn(t, r.Root, "", "rev-parse", mine+"^"); parent != base {
			t.Fatalf("%q: parent %s, want the base %s", c.subject, parent, base)
		}
		if st := gitIn(t, w1, "", "status", "--porcelain"); st != "" {
			t.Fatalf("%q: the worktree is not clean after its commit:\n%s", c.subject, st)
		}
		gitIn(t, r.Root, "", "update-ref", "refs/heads/check", mine)
		if out := gitIn(t, r.Root, "", "fsck", "--strict", "--no-dangling"); out != "" {
			t.Fatalf("%q: git fsck: %s", c.subject, out)
		}
	}
}

// TestTaskCommitRefusesMissingObjects is an index that names a blob the
// repository lacks, as a task that wrote the worktree's index itself could
// leave: no commit is written here, git commit is left to refuse it as
// it does.
func TestTaskCommitRefusesMissingObjects(t *testing.T) {
	ctx := context.Background()
	r, _, w1, _ := taskRepo(t)
	gitIn(t, w1, "", "update-index", "--add", "--cacheinfo", "100644,1111111111111111111111111111111111111111,ghost.txt")
	if sha, done, err := r.commitIndex(ctx, w1, "ghost\n"); done || err != nil {
		t.Fatalf("an index naming a missing object was committed here: %s, %v", sha, err)
	}
	writeFile(t, filepath.Join(w1, "ghost.txt"), "real\n")
	if sha, done, err := r.commitIndex(ctx, w1, "ghost\n"); done || err != nil {
		t.Fatalf("an index naming a missing object was committed here: %s, %v", sha, err)
	}
}

// TestTaskCommitLeavesHooksToGit: a repository with a post-commit hook
// has its task commits made by git commit, which runs it.
func TestTaskCommitLeavesHooksToGit(t *testing.T) {
	ctx := context.Background()
	r, _, w1, _ := taskRepo(t)
	mark := filepath.Join(t.TempDir(), "ran")
	hook := filepath.Join(r.Root, ".git", "hooks", "post-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(w1, "out.txt"), "x\n")
	if _, err := r.Commit(ctx, w1, "hooked", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the post-commit hook did not run: %v", err)
	}
	if !strings.Contains(gitIn(t, w1, "", "show", "--stat", "HEAD"), "out.txt") {
		t.Fatal("the work is not in the commit")
	}
}

// TestResetWorktreeKeeping: a worktree reset after a task removes what the
// task left untracked, ignored or not (a file, a folder, a stray copy
// under .weave/), but the file kept; with nothing left but that file, no
// git clean runs.
func TestResetWorktreeKeeping(t *testing.T) {
	ctx := context.Background()
	r, base, w1, _ := taskRepo(t)
	keep := []string{".weave/plans/p.md"}
	writeFile(t, filepath.Join(w1, ".weave", "plans", "p.md"), "# P\n")
	for _, f := range []string{"build.log", "stray/deep/f", ".weave/plans/other.md", ".weave/junk", "a/new.txt"} {
		writeFile(t, filepath.Join(w1, f), "x\n")
	}
	if err := os.Symlink("/", filepath.Join(w1, "root-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(w1, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.ResetWorktreeKeeping(ctx, w1, "slot-1", base, keep); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"build.log", "stray", ".weave/plans/other.md", ".weave/junk", "a/new.txt", "root-link", "empty"} {
		if _, err := os.Lstat(filepath.Join(w1, f)); err == nil {
			t.Errorf("%s left after the reset", f)
		}
	}
	if b, err := os.ReadFile(filepath.Join(w1, ".weave", "plans", "p.md")); err != nil || string(b) != "# P\n" {
		t.Errorf("the kept file: %q, %v", b, err)
	}
	log := gitLog(t)
	if err := r.ResetWorktreeKeeping(ctx, w1, "slot-1", base, keep); err != nil {
		t.Fatal(err)
	}
	if calls := ran(t, log); slices.Contains(calls, "clean") {
		t.Errorf("git clean ran on a worktree holding nothing untracked but the kept file: %v", calls)
	}
	if st := gitIn(t, w1, "", "status", "--porcelain", "--ignored"); st != "!! .weave/" {
		t.Errorf("status after the reset:\n%s", st)
	}
}
