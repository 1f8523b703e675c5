package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
)

// revertPlan has task 3 wait for task 1 and change the file task 1 made.
const revertPlan = "# P\n\n## TODOs\n\n- [ ] 1. Add a\n- [ ] 2. Add b\n- [ ] 3. Extend a [after: 1]\n"

// landTasks lands one commit per task on weave/<plan> as a run with
// workers does: each made in a worker's worktree on its task branch from
// the integration head, with the task's trailers, landed by rebase and the
// branch moved by compare-and-swap. files[i] is what task i+1 writes.
func landTasks(t *testing.T, dir, plan string, titles []string, files []map[string]string) string {
	t.Helper()
	ctx := context.Background()
	repo, err := gitwork.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := repo.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.BranchAt(ctx, "weave/"+plan, base, false)
	if err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(dir, ".weave", "worktrees", plan, "w1")
	for i, fs := range files {
		n := strconv.Itoa(i + 1)
		if err := repo.Worktree(ctx, wt, "weave/"+plan+"-task-"+n, head); err != nil {
			t.Fatal(err)
		}
		for name, body := range fs {
			if err := os.WriteFile(filepath.Join(wt, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c, err := repo.Commit(ctx, wt, titles[i], []gitwork.Trailer{
			{Key: gitwork.TrailerPlan, Value: plan}, {Key: gitwork.TrailerTask, Value: n},
			{Key: gitwork.TrailerSession, Value: "s1"}, {Key: gitwork.TrailerAttempt, Value: "a" + n},
		})
		if err != nil {
			t.Fatal(err)
		}
		landed, err := repo.Land(ctx, head, c, gitwork.LandRebase)
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.UpdateRef(ctx, "refs/heads/weave/"+plan, landed, head); err != nil {
			t.Fatal(err)
		}
		head = landed
	}
	return head
}

// revertProject is a git repository holding plan p whose three tasks
// landed on weave/p and are ticked.
func revertProject(t *testing.T) (dir, head string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir = project(t, map[string]string{"p": revertPlan, "q": revertPlan})
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "config", "user.name", "T")
	gitIn(t, dir, "config", "user.email", "t@example.com")
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte(".weave/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644)
	gitIn(t, dir, "add", "README")
	gitIn(t, dir, "commit", "-q", "-m", "first")
	head = landTasks(t, dir, "p", []string{"Add a", "Add b", "Extend a"}, []map[string]string{
		{"a.txt": "one\n"}, {"b.txt": "two\n"}, {"a.txt": "one\nthree\n"},
	})
	for _, n := range []string{"1", "2", "3"} {
		if r := runBin(t, nil, "", "--dir", dir, "task", "done", "p", n); r.code != 0 {
			t.Fatalf("task done p %s = %d %q", n, r.code, r.err)
		}
	}
	return dir, head
}

func TestTaskUndoRevert(t *testing.T) {
	dir, head := revertProject(t)
	planFile := filepath.Join(dir, ".weave", "plans", "p.md")
	branchAt := func() string { return gitIn(t, dir, "rev-parse", "weave/p") }

	// Task 2 nobody waits for: its commit is reverted on weave/p, the
	// branch moves onto the revert, and its box is unticked.
	r := runBin(t, nil, "", "--dir", dir, "task", "undo", "p", "2", "--revert")
	if r.code != 0 || !strings.Contains(r.out, "reverted task 2") || !strings.Contains(r.out, "unticked task 2") {
		t.Fatalf("task undo p 2 --revert = %d %q %q", r.code, r.out, r.err)
	}
	newHead := branchAt()
	if gitIn(t, dir, "rev-parse", newHead+"^") != head {
		t.Errorf("weave/p = %s, want one revert commit on top of %s", newHead, head)
	}
	if files := gitIn(t, dir, "ls-tree", "--name-only", newHead); strings.Contains(files, "b.txt") || !strings.Contains(files, "a.txt") {
		t.Errorf("tree after reverting task 2 = %q, want a.txt without b.txt", files)
	}
	msg := gitIn(t, dir, "log", "-1", "--format=%B", newHead)
	for _, want := range []string{`Revert "Add b"`, "This reverts commit ", "Weave-Plan: p", "Weave-Task: 2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("revert commit message %q lacks %q", msg, want)
		}
	}
	if b, _ := os.ReadFile(planFile); !strings.Contains(string(b), "- [ ] 2. Add b") || !strings.Contains(string(b), "- [x] 1. Add a") {
		t.Errorf("plan after reverting task 2:\n%s", b)
	}
	if out := gitIn(t, dir, "status", "--porcelain"); out != "" {
		t.Errorf("the main working tree changed: %q", out)
	}

	// Reverted already: nothing left to revert, and the branch stays.
	if r := runBin(t, nil, "", "--dir", dir, "task", "undo", "p", "2", "--revert"); r.code != exitFailed || !strings.Contains(r.err, "no commit on weave/p") {
		t.Errorf("second revert of task 2 = %d %q, want 1 saying there is no commit to revert", r.code, r.err)
	}

	// Task 3 waits for task 1: off a terminal, no revert without --force.
	r = runBin(t, nil, "", "--dir", dir, "task", "undo", "p", "1", "--revert")
	if r.code != exitUsage || !strings.Contains(r.err, "--force") || !strings.Contains(r.err, "task 3") {
		t.Errorf("revert of a depended-on task without --force = %d %q, want 2 naming task 3 and --force", r.code, r.err)
	}
	if branchAt() != newHead {
		t.Errorf("weave/p moved on a refused revert")
	}

	// With --force it is tried, and task 3's later change to a.txt makes
	// it a conflict: the files are named, the branch and the box stay.
	r = runBin(t, nil, "", "--dir", dir, "task", "undo", "p", "1", "--revert", "--force")
	if r.code != exitFailed || !strings.Contains(r.err, "a.txt") || !strings.Contains(r.err, "nothing was reverted") {
		t.Errorf("revert of task 1 under task 3's change = %d %q, want 1 naming a.txt", r.code, r.err)
	}
	if branchAt() != newHead {
		t.Errorf("weave/p moved on a conflicting revert")
	}
	if b, _ := os.ReadFile(planFile); !strings.Contains(string(b), "- [x] 1. Add a") {
		t.Errorf("task 1 was unticked though its revert failed:\n%s", b)
	}

	// A plan no run with workers landed: no branch to revert on.
	if r := runBin(t, nil, "", "--dir", dir, "task", "undo", "q", "2", "--revert"); r.code != exitFailed || !strings.Contains(r.err, "no integration branch weave/q") {
		t.Errorf("revert in a plan without a branch = %d %q", r.code, r.err)
	}
	// --force alone is for --revert.
	if r := runBin(t, nil, "", "--dir", dir, "task", "undo", "p", "3", "--force"); r.code != exitUsage {
		t.Errorf("task undo --force without --revert = %d %q, want 2", r.code, r.err)
	}

	// While a run holds the project lock nothing is reverted.
	release, err := plans.ProjectStore(dir).Lock()
	if err != nil {
		t.Fatal(err)
	}
	r = runBin(t, nil, "", "--dir", dir, "task", "undo", "p", "3", "--revert")
	release()
	if r.code == 0 || !strings.Contains(r.err, "is driving this project") {
		t.Errorf("revert while a run holds the lock = %d %q, want a refusal", r.code, r.err)
	}
	if branchAt() != newHead {
		t.Errorf("weave/p moved while a run held the lock")
	}

	// The person merged weave/p: reverting task 3 there says how to take
	// the revert onto main too.
	gitIn(t, dir, "merge", "-q", "--ff-only", "weave/p")
	r = runBin(t, nil, "", "--dir", dir, "task", "undo", "p", "3", "--revert")
	if r.code != 0 || !strings.Contains(r.out, "main has the task's commit too: `git merge weave/p`") {
		t.Errorf("revert of a task main holds = %d %q %q, want how to bring the revert to main", r.code, r.out, r.err)
	}

	// Task 1 reverts now that task 3's change is gone.
	if r := runBin(t, nil, "", "--dir", dir, "task", "undo", "p", "1", "--revert", "--force"); r.code != 0 {
		t.Fatalf("task undo p 1 --revert = %d %q", r.code, r.err)
	}
	if files := gitIn(t, dir, "ls-tree", "--name-only", "weave/p"); files != "README" {
		t.Errorf("tree after reverting every task = %q, want README only", files)
	}
}

// undoOnTerminal runs `weave task undo` with args, its standard input a
// terminal that answers, and returns its exit code and output.
func undoOnTerminal(t *testing.T, dir, answer string, args ...string) (int, string, string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, weaveBin(t), append([]string{"--dir", dir, "task", "undo"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = cleanEnv(t), tty, &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = tty.Close()
	if _, err := ptmx.Write([]byte(answer + "\n")); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := ptmx.Read(buf); err != nil {
				return
			}
		}
	}()
	code := 0
	if err := cmd.Wait(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errOut.String()
}

// On a terminal, reverting a task others depend on asks; only yes reverts.
func TestTaskUndoRevertAsksOnATerminal(t *testing.T) {
	dir, _ := revertProject(t)
	if r := runBin(t, nil, "", "--dir", dir, "task", "undo", "p", "3", "--revert"); r.code != 0 {
		t.Fatalf("revert of task 3 = %d %q", r.code, r.err)
	}
	before := gitIn(t, dir, "rev-parse", "weave/p")
	code, _, errOut := undoOnTerminal(t, dir, "n", "p", "1", "--revert")
	if code != exitFailed || !strings.Contains(errOut, "[y/N]") || !strings.Contains(errOut, "not reverted") {
		t.Errorf("answering no = %d %q, want 1 after the question", code, errOut)
	}
	if gitIn(t, dir, "rev-parse", "weave/p") != before {
		t.Errorf("weave/p moved though the person said no")
	}
	code, out, errOut := undoOnTerminal(t, dir, "y", "p", "1", "--revert")
	if code != 0 || !strings.Contains(out, "reverted task 1") {
		t.Errorf("answering yes = %d %q %q, want the revert", code, out, errOut)
	}
	if files := gitIn(t, dir, "ls-tree", "--name-only", "weave/p"); strings.Contains(files, "a.txt") {
		t.Errorf("tree after reverting task 1 = %q", files)
	}
}
