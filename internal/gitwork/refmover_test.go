package gitwork_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/gitwork"
)

// chain makes n commits, each on the one before, from HEAD.
func chain(t *testing.T, r *gitwork.Repo, n int) []string {
	t.Helper()
	prev := strings.TrimSpace(git(t, r.Root, "rev-parse", "HEAD"))
	out := make([]string, n)
	for i := range n {
		prev = strings.TrimSpace(git(t, r.Root, "commit-tree", "-p", prev, "-m", fmt.Sprint("c", i), "HEAD^{tree}"))
		out[i] = prev
	}
	return out
}

func revParse(t *testing.T, r *gitwork.Repo, ref string) string {
	t.Helper()
	return strings.TrimSpace(git(t, r.Root, "rev-parse", ref))
}

// reflog lists what ref pointed at, newest first, with its messages.
func reflog(t *testing.T, r *gitwork.Repo, ref string) (shas, msgs []string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(git(t, r.Root, "reflog", "show", "--format=%H %gs", ref, "--")), "\n") {
		sha, msg, _ := strings.Cut(line, " ")
		shas, msgs = append(shas, sha), append(msgs, msg)
	}
	return shas, msgs
}

// gone reports whether process pid has ended (a zombie nobody reaps
// counts: it runs nothing).
func gone(pid int) bool {
	if pid <= 0 {
		return false // no process was named: 0 and -1 would be groups
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return os.IsNotExist(err)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

// waitFor waits for cond, failing after a generous guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countGit puts a git on PATH that logs its arguments, and returns the log.
func countGit(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "git.log")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\nexec %q \"$@\"\n", log, real)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

func TestMovesShareOneGitProcess(t *testing.T) {
	ctx := context.Background()
	r := moverRepo(t)
	cs := chain(t, r, 20)
	base := revParse(t, r, "HEAD")
	log := countGit(t)
	if err := r.SetBranch(ctx, "weave/p", base); err != nil {
		t.Fatal(err)
	}
	head := base
	for _, c := range cs {
		if err := r.UpdateRef(ctx, "refs/heads/weave/p", c, head); err != nil {
			t.Fatal(err)
		}
		head = c
	}
	b, _ := os.ReadFile(log)
	calls := strings.Count(string(b), "update-ref")
	if calls > 2 {
		t.Errorf("%d update-ref processes for %d moves, want one per reflog message:\n%s", calls, len(cs)+1, b)
	}
	if got := revParse(t, r, "refs/heads/weave/p"); got != cs[len(cs)-1] {
		t.Fatalf("weave/p = %s, want %s", got, cs[len(cs)-1])
	}
	shas, msgs := reflog(t, r, "refs/heads/weave/p")
	if len(shas) != len(cs)+1 || msgs[0] != "weave: land" || msgs[len(msgs)-1] != "weave: branch" {
		t.Fatalf("reflog %v %q, want %d entries, the branch made then landed on", shas, msgs, len(cs)+1)
	}
}

func TestCompareAndSwapThroughMover(t *testing.T) {
	ctx := context.Background()
	r := moverRepo(t)
	cs := chain(t, r, 4)
	base := revParse(t, r, "HEAD")
	ref := "refs/heads/weave/p"
	if err := r.SetBranch(ctx, "weave/p", base); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRef(ctx, ref, cs[0], base); err != nil {
		t.Fatal(err)
	}
	pid := gitwork.MoverPID(r, true)
	if pid == 0 {
		t.Fatal("no update-ref process after a landing")
	}
	if got := revParse(t, r, ref); got != cs[0] {
		t.Fatalf("%s = %s after the swap, want %s", ref, got, cs[0])
	}
	// Someone else moved the branch: the swap from where it was fails.
	git(t, r.Root, "update-ref", ref, cs[1])
	err := r.UpdateRef(ctx, ref, cs[2], cs[0])
	if err == nil {
		t.Fatal("a compare-and-swap from a stale head succeeded")
	}
	for _, want := range []string{ref, cs[0][:12], cs[2][:12], "expected"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got := revParse(t, r, ref); got != cs[1] {
		t.Fatalf("%s = %s after a refused swap, want %s", ref, got, cs[1])
	}
	// The next one works, in a process of its own.
	if err := r.UpdateRef(ctx, ref, cs[3], cs[1]); err != nil {
		t.Fatal(err)
	}
	if got := revParse(t, r, ref); got != cs[3] {
		t.Fatalf("%s = %s, want %s", ref, got, cs[3])
	}
	if p := gitwork.MoverPID(r, true); p == 0 || p == pid || !gone(pid) {
		t.Fatalf("update-ref process %d after the refusal (was %d, gone %v), want a new one", p, pid, gone(pid))
	}
	// A ref git does not have yet: an empty old value asks that it be
	// missing, as git update-ref's does.
	if err := r.UpdateRef(ctx, "refs/heads/fresh", cs[0], ""); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRef(ctx, "refs/heads/fresh", cs[1], ""); err == nil {
		t.Fatal("an update of a ref that exists, asked to be missing, succeeded")
	}
	if got := revParse(t, r, "refs/heads/fresh"); got != cs[0] {
		t.Fatalf("fresh = %s, want %s", got, cs[0])
	}
}

func TestMovesFromManyGoroutines(t *testing.T) {
	ctx := context.Background()
	r := moverRepo(t)
	const G, M = 8, 5
	cs := chain(t, r, G*M)
	base := revParse(t, r, "HEAD")
	shared := "refs/heads/shared"
	git(t, r.Root, "update-ref", shared, base)
	type swap struct{ from, to string }
	var mu sync.Mutex
	var won []swap
	var wg sync.WaitGroup
	errs := make(chan error, G*M*2)
	for g := range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range M {
				c := cs[g*M+i]
				if err := r.SetBranch(ctx, fmt.Sprint("own/", g), c); err != nil {
					errs <- err
					return
				}
				cur, err := r.RevParse(ctx, shared)
				if err != nil {
					errs <- err
					return
				}
				if r.UpdateRef(ctx, shared, c, cur) == nil {
					mu.Lock()
					won = append(won, swap{cur, c})
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for g := range G {
		shas, msgs := reflog(t, r, fmt.Sprint("refs/heads/own/", g))
		if len(shas) != M || shas[0] != cs[g*M+M-1] || revParse(t, r, fmt.Sprint("own/", g)) != cs[g*M+M-1] {
			t.Errorf("own/%d: reflog %v, want the %d moves, the last %s", g, shas, M, cs[g*M+M-1])
		}
		for _, m := range msgs {
			if m != "weave: branch" {
				t.Errorf("own/%d: reflog message %q", g, m)
			}
		}
	}
	// Every swap reported is in the reflog, in one line: each from where
	// the one before left the branch.
	shas, _ := reflog(t, r, shared)
	if len(won) == 0 || len(shas) != len(won)+1 {
		t.Fatalf("%d swaps reported, reflog of %s has %d entries: %v", len(won), shared, len(shas), shas)
	}
	at := base
	for i := len(shas) - 2; i >= 0; i-- {
		s := swap{at, shas[i]}
		found := false
		for _, w := range won {
			found = found || w == s
		}
		if !found {
			t.Fatalf("reflog move %s -> %s is no swap reported (%v)", s.from, s.to, won)
		}
		at = shas[i]
	}
	if got := revParse(t, r, shared); got != at {
		t.Fatalf("%s = %s, the reflog says %s", shared, got, at)
	}
}

func TestMoverEndsWhenIdle(t *testing.T) {
	ctx := context.Background()
	r := moverRepo(t)
	cs := chain(t, r, 1)
	if err := r.SetBranch(ctx, "weave/x", cs[0]); err != nil {
		t.Fatal(err)
	}
	if got := revParse(t, r, "weave/x"); got != cs[0] {
		t.Fatalf("weave/x = %s, want %s", got, cs[0])
	}
	pid := gitwork.MoverPID(r, false)
	if pid == 0 || gone(pid) {
		t.Fatalf("no update-ref process running after a move (pid %d)", pid)
	}
	waitFor(t, "the idle update-ref process to end", func() bool { return gitwork.MoverPID(r, false) == 0 && gone(pid) })
}

func TestCloseEndsMover(t *testing.T) {
	ctx := context.Background()
	r := moverRepo(t)
	cs := chain(t, r, 2)
	if err := r.SetBranch(ctx, "weave/x", cs[0]); err != nil {
		t.Fatal(err)
	}
	pid := gitwork.MoverPID(r, false)
	if pid == 0 {
		t.Fatal("no update-ref process after a move")
	}
	// git ends by itself on its stdin's end: Close reports no kill.
	if err := r.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if p := gitwork.MoverPID(r, false); p != 0 || !gone(pid) {
		t.Fatalf("update-ref process %d (gone %v) after Close", p, gone(pid))
	}
	// The Repo is still usable.
	if err := r.SetBranch(ctx, "weave/x", cs[1]); err != nil {
		t.Fatal(err)
	}
	if got := revParse(t, r, "weave/x"); got != cs[1] {
		t.Fatalf("weave/x = %s after Close and a move, want %s", got, cs[1])
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledMoveKillsMover(t *testing.T) {
	r := moverRepo(t)
	cs := chain(t, r, 3)
	ref := "refs/heads/weave/p"
	// git waits this long for a ref's lock before it gives up.
	git(t, r.Root, "config", "core.filesRefLockTimeout", "15000")
	if err := r.SetBranch(context.Background(), "weave/p", cs[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRef(context.Background(), ref, cs[1], cs[0]); err != nil {
		t.Fatal(err)
	}
	pid := gitwork.MoverPID(r, true)
	if pid <= 0 {
		t.Fatal("no update-ref process after a landing")
	}
	// Someone holds the branch's lock: the landing waits in git until its
	// context ends.
	lock := filepath.Join(r.Root, ".git", "refs", "heads", "weave", "p.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := r.UpdateRef(ctx, ref, cs[2], cs[1])
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a landing whose context ended = %v, want the context's error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the cancelled landing took %v: it waited for git's lock timeout", d)
	}
	if !gone(pid) || gitwork.MoverPID(r, true) != 0 {
		t.Fatalf("update-ref process %d still there after its context ended", pid)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if got := revParse(t, r, ref); got != cs[1] {
		t.Fatalf("%s = %s after a cancelled landing, want %s", ref, got, cs[1])
	}
	if err := r.UpdateRef(context.Background(), ref, cs[2], cs[1]); err != nil {
		t.Fatal(err)
	}
	if got := revParse(t, r, ref); got != cs[2] {
		t.Fatalf("%s = %s, want %s", ref, got, cs[2])
	}
}

func TestMoverRefusedRefNames(t *testing.T) {
	ctx := context.Background()
	r := moverRepo(t)
	cs := chain(t, r, 2)
	main := revParse(t, r, "main")
	for _, name := range []string{
		"bad..name",
		"bad name",
		"x " + cs[0] + "\nupdate refs/heads/main " + cs[1],
		"x\nupdate refs/heads/main " + cs[1] + "\nprepare\ncommit\nstart",
	} {
		if err := r.SetBranch(ctx, name, cs[1]); err == nil {
			t.Errorf("branch %q was pointed at %s", name, cs[1])
		}
		if err := r.UpdateRef(ctx, "refs/heads/"+name, cs[1], main); err == nil {
			t.Errorf("ref %q was moved", name)
		}
		if got := revParse(t, r, "main"); got != main {
			t.Fatalf("main moved to %s by a move of %q", got, name)
		}
		if err := r.SetBranch(ctx, "weave/ok", cs[0]); err != nil {
			t.Fatalf("the move after %q: %v", name, err)
		}
		if err := r.SetBranch(ctx, "weave/ok", cs[1]); err != nil {
			t.Fatalf("the move after %q: %v", name, err)
		}
	}
	if _, msgs := reflog(t, r, "refs/heads/weave/ok"); len(msgs) != 8 {
		t.Fatalf("weave/ok's reflog has %d entries, want 8", len(msgs))
	}
	// A ref git refuses in the process is git's error, the ref named.
	err := r.SetBranch(ctx, "bad..name", cs[1])
	if err == nil || !strings.Contains(err.Error(), "bad..name") {
		t.Fatalf("error %v does not name the branch", err)
	}
}

func TestMoverDiedFallsBack(t *testing.T) {
	ctx := context.Background()
	r := moverRepo(t)
	cs := chain(t, r, 3)
	if err := r.SetBranch(ctx, "weave/x", cs[0]); err != nil {
		t.Fatal(err)
	}
	pid := gitwork.MoverPID(r, false)
	if pid <= 0 {
		t.Fatal("no update-ref process after a move")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Its death is seen at the next move, which a one-shot git makes.
	if err := r.SetBranch(ctx, "weave/x", cs[1]); err != nil {
		t.Fatalf("a move after the process died: %v", err)
	}
	if got := revParse(t, r, "weave/x"); got != cs[1] {
		t.Fatalf("weave/x = %s, want %s", got, cs[1])
	}
	if err := r.SetBranch(ctx, "weave/x", cs[2]); err != nil {
		t.Fatal(err)
	}
	if p := gitwork.MoverPID(r, false); p == 0 || p == pid {
		t.Fatalf("update-ref process %d after the death of %d, want a new one", p, pid)
	}
	if got := revParse(t, r, "weave/x"); got != cs[2] {
		t.Fatalf("weave/x = %s, want %s", got, cs[2])
	}
}

// TestMoverHelper is the host killed in TestMoverEndsWithItsHost: it
// moves a branch in the repository its environment names, says the pid
// of its update-ref process, and waits to be killed.
func TestMoverHelper(t *testing.T) {
	dir := os.Getenv("GITWORK_MOVER_HELPER")
	if dir == "" {
		t.Skip("run by TestMoverEndsWithItsHost")
	}
	ctx := context.Background()
	r, err := gitwork.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetBranch(ctx, "weave/helper", "HEAD"); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("pid %d\n", gitwork.MoverPID(r, false))
	select {}
}

func TestMoverEndsWithItsHost(t *testing.T) {
	r := moverRepo(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMoverHelper$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), "GITWORK_MOVER_HELPER="+r.Root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	pid := 0
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "pid %d", &pid); err == nil {
			break
		}
	}
	if pid <= 0 {
		t.Fatal("the helper said no update-ref pid")
	}
	if got := revParse(t, r, "weave/helper"); got != revParse(t, r, "HEAD") {
		t.Fatalf("weave/helper = %s", got)
	}
	if gone(pid) {
		t.Fatalf("update-ref process %d ended with its host still there", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitFor(t, "the update-ref process of a killed host to end", func() bool { return gone(pid) })
}

// moverRepo is repo with a config (a ref lock timeout of git's own) that
// leaves every move to git, so that the long-lived update-ref processes
// are the ones tested here.
func moverRepo(t *testing.T) *gitwork.Repo {
	t.Helper()
	r := repo(t)
	if _, err := r.Git(context.Background(), "", "config", "core.filesRefLockTimeout", "100"); err != nil {
		t.Fatal(err)
	}
	return r
}
