package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/natsbus"
	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/internal/gitwork"
)

// workerProc is a `weave worker` process and the lines it prints.
type workerProc struct {
	cmd   *exec.Cmd
	lines chan string
	mu    sync.Mutex
	all   []string
}

// startWorker starts the built weave as a worker on the bus at url and
// waits until it has joined.
func startWorker(t *testing.T, url, name string, args ...string) *workerProc {
	t.Helper()
	return startWorkerEnv(t, append(cleanEnv(t), "WEAVE_SANDBOX_MODE=off"), url, name, args...)
}

// startWorkerEnv is startWorker with the worker's environment env.
func startWorkerEnv(t *testing.T, env []string, url, name string, args ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(weaveBin(t), append([]string{"worker", "--bus", url, "--name", name, "--repo", filepath.Join(t.TempDir(), name)}, args...)...)
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workerProc{cmd: cmd, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.mu.Lock()
			w.all = append(w.all, sc.Text())
			w.mu.Unlock()
			select {
			case w.lines <- sc.Text():
			default:
			}
		}
		close(w.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	w.waitLine(t, "joined", func() string { return errOut.String() })
	return w
}

func (w *workerProc) waitLine(t *testing.T, sub string, why func() string) {
	t.Helper()
	guard := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				t.Fatalf("worker exited before printing %q: %s", sub, why())
			}
			if strings.Contains(line, sub) {
				return
			}
		case <-guard:
			t.Fatalf("worker never printed %q", sub)
		}
	}
}

// coordRepo is a project's repository with one commit and no .weave/.
func coordRepo(t *testing.T) (*gitwork.Repo, string) {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "T"}, {"config", "user.email", "t@example.com"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "."}, {"commit", "-q", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	r, err := gitwork.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := r.Head(context.Background())
	return r, head
}

type coordWorld struct {
	url   string
	repo  *gitwork.Repo
	base  string
	coord *workers.Coordinator
	mu    sync.Mutex
	evs   []workers.Event
}

func newCoordWorld(t *testing.T, url string, lease time.Duration) *coordWorld {
	t.Helper()
	w := &coordWorld{url: url}
	w.repo, w.base = coordRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	b, err := natsbus.New(ctx, url, bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	w.coord, err = workers.NewCoordinator(ctx, b, b.JetStream(), w.repo, "coord", workers.CoordinatorOptions{Lease: lease, Events: func(e workers.Event) {
		w.mu.Lock()
		w.evs = append(w.evs, e)
		w.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.coord.Close() })
	return w
}

func (w *coordWorld) count(typ, worker string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.evs {
		if e.Type == typ && (worker == "" || e.Worker == worker) {
			n++
		}
	}
	return n
}

func (w *coordWorld) offer(plan string, task int, needs ...string) workers.Offer {
	return workers.Offer{Run: "p", Task: task, Title: fmt.Sprintf("task %d", task), Needs: workers.Needs{Labels: needs}, Plan: plan,
		Session: "s1", Base: w.base, Branch: fmt.Sprintf("weave/p-task-%d", task), Attempt: 1, AttemptID: fmt.Sprintf("att%d", task)}
}

const workerPlan = "# p\n\n## TODOs\n\n" +
	"- [ ] 1. one\n\n  ```sh\n  echo one > one.txt\n  ```\n\n" +
	"- [ ] 2. two\n\n  ```sh\n  echo two > two.txt\n  ```\n\n  ```sh verify\n  test -f two.txt\n  ```\n"

// TestWorkerRunsTaskOverNATS: two `weave worker` processes join a NATS
// bus; a task needing a GPU is awarded to the one that has it, runs there
// in a worktree of its own, and its commit comes back holding that
// task's work only. `weave workers` lists both.
func TestWorkerRunsTaskOverNATS(t *testing.T) {
	url := bustest.StartNATS(t).URL()
	w := newCoordWorld(t, url, 10*time.Second)
	startWorker(t, url, "plain", "--labels", "os=linux")
	gpu := startWorker(t, url, "big", "--labels", "os=linux,gpu", "--slots", "2")

	res := runBin(t, cleanEnv(t), "", "workers", "--bus", url)
	if res.code != 0 || !strings.Contains(res.out, "plain") || !strings.Contains(res.out, "os=linux,gpu") {
		t.Fatalf("weave workers = %d\n%s%s", res.code, res.out, res.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	got, err := w.coord.Offer(ctx, w.offer(workerPlan, 2, "gpu"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Worker != "big" {
		t.Fatalf("task ran on %s, want big", got.Worker)
	}
	files, _ := w.repo.Git(ctx, "", "ls-tree", "--name-only", got.Commit)
	if !strings.Contains(files, "two.txt") || strings.Contains(files, "one.txt") || strings.Contains(files, ".weave") {
		t.Fatalf("files of the task's commit: %q", files)
	}
	msg, _ := w.repo.Git(ctx, "", "log", "-1", "--format=%B", got.Commit)
	for _, want := range []string{"two", "Weave-Plan: p", "Weave-Task: 2", "Weave-Attempt: att2", "Weave-Session: s1"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("commit message %q lacks %q", msg, want)
		}
	}
	gpu.waitLine(t, "returned commit", func() string { return "" })
}

// TestWorkerKilledMidTask: the worker running a task is killed with
// SIGKILL during its block; its lease lapses, the task is offered again,
// another worker runs it, and it comes back once.
func TestWorkerKilledMidTask(t *testing.T) {
	url := bustest.StartNATS(t).URL()
	w := newCoordWorld(t, url, 2*time.Second)
	shared := t.TempDir()
	plan := "# p\n\n## TODOs\n\n- [ ] 1. slow\n\n  ```sh\n" +
		"  echo $$ >> " + shared + "/started\n" +
		"  while [ ! -f " + shared + "/release ]; do sleep 0.05; done\n" +
		"  echo done > out.txt\n  ```\n"
	victim := startWorker(t, url, "victim")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type out struct {
		res workers.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := w.coord.Offer(ctx, w.offer(plan, 1))
		done <- out{res, err}
	}()
	waitFile(t, filepath.Join(shared, "started"))
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = victim.cmd.Wait()
	if err := os.WriteFile(filepath.Join(shared, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	startWorker(t, url, "heir")
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatal("the task was never run again")
	}
	if o.err != nil || o.res.Worker != "heir" {
		t.Fatalf("Offer = %+v, %v; want heir's commit", o.res, o.err)
	}
	if w.count("work.lost", "victim") != 1 || w.count("work.returned", "") != 1 {
		t.Fatalf("events %+v", w.evs)
	}
	// The victim's block died with it: one shell started there, and it is
	// gone.
	data, _ := os.ReadFile(filepath.Join(shared, "started"))
	pids := strings.Fields(string(data))
	if len(pids) != 2 {
		t.Fatalf("blocks started: %v, want the victim's and the heir's", pids)
	}
	pid, _ := strconv.Atoi(pids[0])
	if !waitGone(pid) {
		t.Fatalf("the killed worker's block (pid %d) still runs", pid)
	}
}

// waitFile waits until path holds at least one whole line.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		// A block's `echo >>` makes the file before it writes the line:
		// only the whole line says the block got that far.
		if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWorkerBadCredentials: a worker with a wrong password, or a creds
// file that is no creds file, is refused by the server and says so; the
// password never shows.
func TestWorkerBadCredentials(t *testing.T) {
	url := bustest.StartNATSConfig(t, `authorization { users: [{user: w, password: "right-pw-123"}] }`).URL()
	host := strings.TrimPrefix(url, "nats://")
	res := runBin(t, cleanEnv(t), "", "worker", "--bus", "nats://w:wrong-pw-456@"+host, "--name", "x", "--repo", t.TempDir())
	if res.code == 0 || !strings.Contains(res.err, "refused the credentials") || strings.Contains(res.err+res.out, "wrong-pw-456") {
		t.Fatalf("worker with a wrong password = %d\n%s%s", res.code, res.out, res.err)
	}
	bad := filepath.Join(t.TempDir(), "bad.creds")
	if err := os.WriteFile(bad, []byte("not a creds file"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = runBin(t, cleanEnv(t), "", "workers", "--bus", url, "--creds", bad)
	if res.code == 0 || res.err == "" {
		t.Fatalf("workers with a bad creds file = %d\n%s%s", res.code, res.out, res.err)
	}
	res = runBin(t, cleanEnv(t), "", "workers", "--bus", "nats://w:right-pw-123@"+host)
	if res.code != 0 || !strings.Contains(res.out, "no workers") {
		t.Fatalf("workers with the right password = %d\n%s%s", res.code, res.out, res.err)
	}
}

// startWorkerAt is startWorker with the worker's repository at repo.
func startWorkerAt(t *testing.T, url, name, repo string, args ...string) *workerProc {
	t.Helper()
	return startWorker(t, url, name, append([]string{"--repo", repo}, args...)...)
}

// TestStartWorkWithRemoteWorkers: `start-work --workers 2 --bus nats://`
// coordinates the run over NATS: the task that needs a GPU goes to the
// `weave worker` that has one, the others to whichever worker bids best
// (the run's own local ones bid too), and every task lands on weave/<plan>
// through its verify blocks, ticked once.
func TestStartWorkWithRemoteWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	big := startWorker(t, url, "big", "--labels", "gpu")
	plan := "# Far\n\n## TODOs\n\n" +
		"- [ ] 1. One\n  ```sh\n  echo one > one.txt\n  ```\n  ```sh verify\n  test -f one.txt\n  ```\n" +
		"- [ ] 2. Two [needs: gpu]\n  ```sh\n  echo two > two.txt\n  ```\n  ```sh verify\n  grep -q two two.txt\n  ```\n" +
		"- [ ] 3. Three\n  ```sh\n  echo three > three.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"far": plan}, map[string]string{"README": "hi\n"})
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "far", "--workers", "2", "--bus", url, "--json")
	if code != 0 {
		t.Fatalf("start-work --workers 2 --bus = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if p := planOf(t, dir, "far"); strings.Count(p, "- [x]") != 3 {
		t.Errorf("plan after the run:\n%s\nwant 3 ticks", p)
	}
	if got := gitIn(t, dir, "log", "--format=%s", "main..weave/far"); strings.Count(got, "\n") != 2 {
		t.Errorf("commits on weave/far:\n%s\nwant one per task", got)
	}
	if got := gitIn(t, dir, "show", "weave/far:two.txt"); got != "two" {
		t.Errorf("two.txt on weave/far = %q", got)
	}
	big.waitLine(t, "task far.2: returned commit", func() string { return strings.Join(big.all, "\n") })
	// Each award is an event of --json, naming the worker and its labels.
	awarded, labels := map[int]string{}, map[int]string{}
	for _, ev := range events(t, out) {
		if ev.Type == "work.awarded" {
			awarded[ev.Task], labels[ev.Task] = ev.WorkerName, strings.Join(ev.WorkerLabels, ",")
		}
	}
	if len(awarded) != 3 || awarded[2] != "big" || labels[2] != "gpu" {
		t.Errorf("awards in --json: %v (labels %v), want all three tasks, task 2 to big [gpu]", awarded, labels)
	}
}

// TestRemoteClaimNotTrusted: a worker whose task passes its verify blocks
// there returns a commit whose verify fails on the coordinator's landed
// tree. The coordinator runs them itself: the task is not ticked, its work
// not landed, and the plan pauses naming it.
func TestRemoteClaimNotTrusted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	// The verify passes only where the worker's repository is.
	repo := filepath.Join(t.TempDir(), "elsewhere-repo")
	w := startWorkerAt(t, url, "liar", repo, "--labels", "gpu")
	plan := "# Claim\n\n## TODOs\n\n" +
		"- [ ] 1. Only there [needs: gpu]\n  ```sh\n  echo x > x.txt\n  ```\n  ```sh verify\n  case \"$PWD\" in *elsewhere-repo*) true;; *) false;; esac\n  ```\n"
	dir := workersRepo(t, map[string]string{"claim": plan}, nil)
	code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "claim", "--workers", "2", "--bus", url, "--retries", "0")
	if code != exitPaused || !strings.Contains(errOut, "task 1") {
		t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s\nwant a pause naming task 1", code, out, errOut)
	}
	if p := planOf(t, dir, "claim"); !strings.Contains(p, "- [ ] 1.") {
		t.Errorf("plan:\n%s\nwant task 1 unticked", p)
	}
	if _, err := exec.Command("git", "-C", dir, "cat-file", "-e", "weave/claim:x.txt").CombinedOutput(); err == nil {
		t.Error("x.txt landed on weave/claim although its verify failed there")
	}
	w.waitLine(t, "task claim.1: returned commit", func() string { return strings.Join(w.all, "\n") })
}

// TestWorkerRidesOutNATSRestart: nats-server restarts while a `weave
// worker` runs a task's block; both sides reconnect, the worker's lease
// holds, and the task's commit comes back once.
func TestWorkerRidesOutNATSRestart(t *testing.T) {
	ns := bustest.StartNATS(t)
	w := newCoordWorld(t, ns.URL(), 20*time.Second)
	shared := t.TempDir()
	plan := "# p\n\n## TODOs\n\n- [ ] 1. slow\n\n  ```sh\n" +
		"  echo started > " + shared + "/started\n" +
		"  while [ ! -f " + shared + "/release ]; do sleep 0.05; done\n" +
		"  echo done > out.txt\n  ```\n"
	wp := startWorker(t, ns.URL(), "steady")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type out struct {
		res workers.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := w.coord.Offer(ctx, w.offer(plan, 1))
		done <- out{res, err}
	}()
	waitFile(t, filepath.Join(shared, "started"))
	ns.Stop()
	ns.Start()
	if err := os.WriteFile(filepath.Join(shared, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatalf("no result after the restart; worker said:\n%s", strings.Join(wp.all, "\n"))
	}
	if o.err != nil || o.res.Worker != "steady" {
		t.Fatalf("Offer = %+v, %v", o.res, o.err)
	}
	if w.count("work.lost", "") != 0 || w.count("work.returned", "") != 1 {
		t.Fatalf("events %+v", w.evs)
	}
	files, _ := w.repo.Git(ctx, "", "ls-tree", "--name-only", o.res.Commit)
	if !strings.Contains(files, "out.txt") {
		t.Fatalf("files of the commit: %q", files)
	}
}

// workerAccounts is docs/workers-nats.md's account layout, with passwords.
const workerAccounts = `accounts {
  WEAVE {
    jetstream: enabled
    users [
      { user: coordinator, password: "coord-pw-111"
        permissions {
          publish: ["weave.>", "$JS.API.>", "$KV.>", "$O.WEAVE_BUNDLES.>", "$JS.FC.>", "$JS.ACK.>", "_INBOX.>"]
          subscribe: ["weave.>", "_INBOX.>"]
        } }
      { user: worker1, password: "worker-pw-222"
        permissions {
          publish: {
            allow: ["weave.pub.open.*", "weave.req.open.*", "$JS.API.>", "$KV.WEAVE_SUBS.>", "$KV.WEAVE_WORKERS.worker1", "weave.hold.*.worker1", "$O.WEAVE_BUNDLES.>", "$JS.FC.>", "$JS.ACK.>", "_INBOX.>"]
            deny: ["$KV.WEAVE_LEASES.>"]
          }
          subscribe: ["weave.pub.open.*", "weave.req.open.*", "_INBOX.>"]
        } }
    ]
  }
}`

// TestWorkerLeastPrivilege runs a task with the documented accounts: the
// coordinator and the worker each as a user of their own, the worker
// without the right to write a lease. The task comes back; the worker's
// user trying to write a lease is refused by the server.
func TestWorkerLeastPrivilege(t *testing.T) {
	ns := bustest.StartNATSConfig(t, workerAccounts)
	host := strings.TrimPrefix(ns.URL(), "nats://")
	w := newCoordWorld(t, "nats://coordinator:coord-pw-111@"+host, 10*time.Second)
	startWorker(t, "nats://worker1:worker-pw-222@"+host, "worker1")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := w.coord.Offer(ctx, w.offer(workerPlan, 1))
	if err != nil || res.Worker != "worker1" {
		t.Fatalf("Offer = %+v, %v", res, err)
	}
	// The worker's user forges a lease.
	nc, err := nats.Connect("nats://worker1:worker-pw-222@"+host, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, workers.LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if _, err := kv.Put(pctx, "p.9", []byte(`{"worker":"worker1","award":"mine"}`)); err == nil {
		t.Fatal("the worker's user wrote a lease")
	}
}

// TestStartWorkThroughGitRemote: with run.remote: origin, a run
// coordinated over NATS moves its code through that git remote instead of
// bundles: the `weave worker` given the remote fetches the base there and
// pushes its commit back; the coordinator lands it after its verify blocks
// pass on the landed tree. A worker not given the remote never gets a
// task, though it fits best; and a commit whose verify fails on the
// landed tree is not ticked.
func TestStartWorkThroughGitRemote(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	bare := filepath.Join(t.TempDir(), "origin.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", bare).CombinedOutput(); err != nil {
		t.Fatalf("git init --bare: %v %s", err, out)
	}
	far := startWorker(t, url, "far", "--labels", "gpu", "--remote", bare)
	blind := startWorker(t, url, "blind", "--labels", "gpu", "--slots", "4")
	plan := "# Via\n\n## TODOs\n\n" +
		"- [ ] 1. Two [needs: gpu]\n  ```sh\n  echo two > two.txt\n  ```\n  ```sh verify\n  grep -q two two.txt\n  ```\n" +
		"- [ ] 2. Liar [needs: gpu]\n  ```sh\n  echo x > x.txt\n  ```\n  ```sh verify\n  case \"$PWD\" in *worktrees/w*) true;; *) false;; esac\n  ```\n"
	dir := workersRepo(t, map[string]string{"via": plan}, map[string]string{"README": "hi\n"})
	gitIn(t, dir, "remote", "add", "origin", bare)
	code, out, errOut := runWeave(t, bin, dir, append(cleanEnv(t), "WEAVE_RUN_REMOTE=origin"), "start-work", "via", "--workers", "2", "--bus", url, "--json", "--retries", "0")
	if code != exitPaused {
		t.Fatalf("start-work = %d\nstdout: %s\nstderr: %s\nwant a pause on task 2", code, out, errOut)
	}
	p := planOf(t, dir, "via")
	if !strings.Contains(p, "- [x] 1.") || !strings.Contains(p, "- [ ] 2.") {
		t.Errorf("plan after the run:\n%s\nwant task 1 ticked, task 2 not (its verify fails on the landed tree)", p)
	}
	if got := gitIn(t, dir, "show", "weave/via:two.txt"); got != "two" {
		t.Errorf("two.txt on weave/via = %q", got)
	}
	if err := exec.Command("git", "-C", dir, "cat-file", "-e", "weave/via:x.txt").Run(); err == nil {
		t.Error("x.txt landed although its verify failed on the landed tree")
	}
	for _, ev := range events(t, out) {
		if ev.Type == "work.awarded" && ev.WorkerName != "far" {
			t.Errorf("task %d awarded to %s, want far alone (the only worker given the remote)", ev.Task, ev.WorkerName)
		}
	}
	far.waitLine(t, "task via.1: returned commit", func() string { return strings.Join(far.all, "\n") })
	if len(blind.all) != 1 { // its "joined" line
		t.Errorf("the worker without the remote said:\n%s", strings.Join(blind.all, "\n"))
	}
	// The base went through the remote; no result ref is left there.
	base := gitIn(t, dir, "rev-parse", "main")
	if got := gitIn(t, bare, "rev-parse", "refs/weave/base/"+base); got != base {
		t.Errorf("the remote's base ref = %s, want %s", got, base)
	}
	if left := gitIn(t, bare, "for-each-ref", "refs/weave/results/"); left != "" {
		t.Errorf("result refs left on the remote:\n%s", left)
	}
}

// TestStatusDuringRemoteRun: while a `weave worker` runs a task of a run
// coordinated over NATS, `weave status` names that worker, its labels and
// its last heartbeat, from the run's state.json.
func TestStatusDuringRemoteRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	url := bustest.StartNATS(t).URL()
	startWorker(t, url, "big", "--labels", "gpu,os=linux")
	shared := t.TempDir()
	plan := "# Seen\n\n## TODOs\n\n- [ ] 1. Far [needs: gpu]\n  ```sh\n" +
		"  i=0; until [ -e " + shared + "/release ]; do i=$((i+1)); [ $i -lt 1200 ] || exit 9; sleep 0.05; done; echo x > x.txt\n  ```\n"
	dir := workersRepo(t, map[string]string{"seen": plan}, nil)
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runWeave(t, bin, dir, cleanEnv(t), "start-work", "seen", "--workers", "2", "--bus", url, "--json")
		done <- result{code, out, errOut}
	}()
	release := func() { _ = os.WriteFile(filepath.Join(shared, "release"), nil, 0o644) }
	defer release()
	guard := time.Now().Add(60 * time.Second)
	for {
		_, out, _ := runWeave(t, bin, dir, cleanEnv(t), "status", "--json")
		var st struct {
			Plans []struct {
				Running []struct {
					Worker        string
					Task          int
					Labels        []string
					LastHeartbeat string `json:"last_heartbeat"`
				}
			}
		}
		if json.Unmarshal([]byte(out), &st) == nil && len(st.Plans) == 1 && len(st.Plans[0].Running) == 1 {
			r := st.Plans[0].Running[0]
			if r.Worker == "big" && r.Task == 1 && strings.Join(r.Labels, ",") == "gpu,os=linux" && r.LastHeartbeat != "" {
				break
			}
		}
		select {
		case r := <-done:
			t.Fatalf("start-work ended (%d) before status showed the remote worker:\n%s\n%s\nlast status:\n%s", r.code, r.out, r.errOut, out)
		default:
		}
		if time.Now().After(guard) {
			t.Fatalf("status never showed the remote worker; last:\n%s", out)
		}
	}
	release()
	if r := <-done; r.code != 0 {
		t.Fatalf("start-work = %d\n%s\n%s", r.code, r.out, r.errOut)
	}
}

// TestWorkerRunsTasksUnderItsOwnConfig: a worker loads its host once, from
// its own repository's config (trusted by its owner), and every task it is
// awarded runs under it; the .weave/config.yaml that a coordinator's code
// carries is never read. The worker's config bounds a block to 300ms, the
// coordinator's would give it an hour: the task whose block outlives the
// worker's bound fails, and the worker goes on to run the next task.
// Before the worker loaded its host, a task ran as a start-work of its
// worktree, where the worker's own project config never applied.
func TestWorkerRunsTasksUnderItsOwnConfig(t *testing.T) {
	url := bustest.StartNATS(t).URL()
	w := newCoordWorld(t, url, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The coordinator's code carries a config of its own.
	cdir := w.repo.Root
	if err := os.MkdirAll(filepath.Join(cdir, ".weave"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cdir, ".weave", "config.yaml"), []byte("runbook:\n  block_timeout: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.repo.Git(ctx, "", "add", "-f", ".weave/config.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.repo.Git(ctx, "", "commit", "-q", "-m", "config"); err != nil {
		t.Fatal(err)
	}
	w.base, _, _ = w.repo.Head(ctx)
	// The worker's own repository, with its owner's config.
	repo := filepath.Join(t.TempDir(), "own")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(repo, ".weave"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".weave", "config.yaml"), []byte("runbook:\n  block_timeout: 300ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wp := startWorker(t, url, "own", "--repo", repo)

	const plan = "# p\n\n## TODOs\n\n" +
		"- [ ] 1. slow\n\n  ```sh\n  sleep 5; echo late > late.txt\n  ```\n\n" +
		"- [ ] 2. quick\n\n  ```sh\n  echo two > two.txt\n  ```\n"
	got, err := w.coord.Offer(ctx, w.offer(plan, 1))
	if err == nil || !strings.Contains(err.Error(), "runbook.block_timeout") {
		t.Fatalf("task 1 under the worker's 300ms bound: commit %q, error %v; want it stopped by runbook.block_timeout", got.Commit, err)
	}
	got, err = w.coord.Offer(ctx, w.offer(plan, 2))
	if err != nil {
		t.Fatal(err)
	}
	if got.Commit == "" || got.Error != "" {
		t.Fatalf("task 2 after task 1 failed: commit %q, error %q", got.Commit, got.Error)
	}
	files, _ := w.repo.Git(ctx, "", "ls-tree", "-r", "--name-only", got.Commit)
	if !strings.Contains(files, "two.txt") || strings.Contains(files, "late.txt") {
		t.Fatalf("files of task 2's commit: %q", files)
	}
	wp.waitLine(t, "returned commit", func() string { return "" })
}
