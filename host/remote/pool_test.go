package remote_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/natsbus"
	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/host/remote"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func newRepo(t *testing.T, commit bool) *gitwork.Repo {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "config", "user.name", "T")
	git(t, dir, "config", "user.email", "t@example.com")
	if commit {
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "add", ".")
		git(t, dir, "commit", "-q", "-m", "base")
	}
	r, err := gitwork.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newBus(t *testing.T, url string) *natsbus.Bus {
	t.Helper()
	b, err := natsbus.New(context.Background(), url, bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// commitIn makes the task's one commit in a worktree of r named after tag.
func commitIn(ctx context.Context, r *gitwork.Repo, tag, plan string, task int, base, attempt string) (string, error) {
	dir := filepath.Join(r.Root, ".weave", "worktrees", tag)
	if err := r.Worktree(ctx, dir, "wt-"+tag, base); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "by.txt"), []byte(tag+"\n"), 0o644); err != nil {
		return "", err
	}
	return r.Commit(ctx, dir, "task", []gitwork.Trailer{{Key: gitwork.TrailerPlan, Value: plan},
		{Key: gitwork.TrailerTask, Value: strconv.Itoa(task)}, {Key: gitwork.TrailerAttempt, Value: attempt}})
}

// localWorker is a run.Worker of the coordinator's own process.
type localWorker struct {
	repo *gitwork.Repo
	got  atomic.Pointer[run.Assignment]
}

func (w *localWorker) Name() string { return "1" }

func (w *localWorker) Run(ctx context.Context, a run.Assignment, _ io.Writer) (run.Outcome, error) {
	w.got.Store(&a)
	sha, err := commitIn(ctx, w.repo, "local-"+a.AttemptID, a.Plan.Name, a.Task.Ordinal(), a.Base, a.AttemptID)
	return run.Outcome{Commit: sha}, err
}

const planSrc = "# p\n\n## TODOs\n\n- [ ] 1. Here\n  ```sh\n  true\n  ```\n- [ ] 2. Big [needs: gpu]\n  ```sh\n  true\n  ```\n"

// TestPoolOffersToLocalAndRemote: a pool's slot hands a task the local
// workers fit to them, with the run's very assignment, and a task needing
// a GPU to the remote worker that has one; each commit lands on the
// task's branch in the coordinator's repository.
func TestPoolOffersToLocalAndRemote(t *testing.T) {
	ns := bustest.StartNATS(t)
	repo := newRepo(t, true)
	base, _, _ := repo.Head(context.Background())
	local := &localWorker{repo: repo}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := remote.NewPool(ctx, newBus(t, ns.URL()), repo, "coordinator-p", []run.Worker{local}, remote.Options{Window: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rb := newBus(t, ns.URL())
	far, err := workers.Join(ctx, rb, rb.JetStream(), newRepo(t, false), workers.Info{Name: "far", Labels: []string{"gpu"}, Slots: 1},
		func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
			return commitIn(ctx, r, "far-"+a.Award, a.Run, a.Task, a.Base, a.AttemptID)
		}, workers.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()

	p := plans.Parse([]byte(planSrc))
	p.Name = "p"
	slot := pool.Workers()[0]
	for _, tc := range []struct {
		task int
		by   string
	}{{1, "local-att1"}, {2, "far-"}} {
		task, _ := p.ByOrdinal(tc.task)
		a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: fmt.Sprintf("weave/p-task-%d", tc.task),
			Attempt: 1, AttemptID: fmt.Sprintf("att%d", tc.task)}
		var out strings.Builder
		o, err := slot.Run(ctx, a, &out)
		if err != nil {
			t.Fatalf("task %d: %v", tc.task, err)
		}
		if got := git(t, repo.Root, "rev-parse", a.Branch); got != o.Commit {
			t.Fatalf("task %d: branch at %s, outcome %s", tc.task, got, o.Commit)
		}
		if by := git(t, repo.Root, "show", o.Commit+":by.txt"); !strings.HasPrefix(by, tc.by) {
			t.Fatalf("task %d ran on %q, want %s...", tc.task, by, tc.by)
		}
		if !strings.Contains(out.String(), "ran on worker") {
			t.Fatalf("task %d output %q does not say where it ran", tc.task, out.String())
		}
	}
	if a := local.got.Load(); a == nil || a.Plan != p || a.AttemptID != "att1" {
		t.Fatalf("the local worker got %+v, want the run's own assignment of task 1", a)
	}
}

// TestPoolThroughGitRemote: with run.remote set, the code goes through
// the git remote, not the bundle store: the base is pushed there, the
// worker fetches it and pushes its commit back, and the coordinator
// fetches that, checks it as it checks a bundle, and deletes the ref. A
// worker not given the remote does not bid, even when it alone fits.
func TestPoolThroughGitRemote(t *testing.T) {
	ns := bustest.StartNATS(t)
	repo := newRepo(t, true)
	bare := filepath.Join(t.TempDir(), "origin.git")
	git(t, repo.Root, "init", "-q", "--bare", bare)
	git(t, repo.Root, "remote", "add", "origin", bare)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base, _, _ := repo.Head(ctx)
	url, err := remote.GitRemoteURL(ctx, repo, "origin")
	if err != nil || url != bare {
		t.Fatalf("GitRemoteURL = %q, %v; want %s", url, err, bare)
	}
	nobid := make(chan struct{}, 16)
	pool, err := remote.NewPool(ctx, newBus(t, ns.URL()), repo, "coordinator-p", []run.Worker{&localWorker{repo: repo}},
		remote.Options{Window: 100 * time.Millisecond, Remote: "origin", RemoteURL: url, Events: func(e workers.Event) {
			if e.Type == "work.nobid" {
				nobid <- struct{}{}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	join := func(name string, remotes []string, ran *atomic.Int32) *workers.Agent {
		b := newBus(t, ns.URL())
		a, err := workers.Join(ctx, b, b.JetStream(), newRepo(t, false), workers.Info{Name: name, Labels: []string{"gpu"}, Slots: 1},
			func(ctx context.Context, r *gitwork.Repo, a workers.Assignment, _ io.Writer) (string, error) {
				ran.Add(1)
				return commitIn(ctx, r, name+"-"+a.Award, a.Run, a.Task, a.Base, a.AttemptID)
			}, workers.AgentOptions{Remotes: remotes})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	var nopeRan, farRan atomic.Int32
	join("nope", nil, &nopeRan)

	p := plans.Parse([]byte(planSrc))
	p.Name = "p"
	task, _ := p.ByOrdinal(2)
	a := run.Assignment{Plan: p, Task: task, Session: "s", Base: base, Branch: "weave/p-task-2", Attempt: 1, AttemptID: "att2"}
	// Only a worker without the remote fits: nobody bids.
	octx, ocancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := pool.Workers()[0].Run(octx, a, io.Discard)
		done <- err
	}()
	select {
	case <-nobid:
	case <-ctx.Done():
		t.Fatal("no work.nobid while the only GPU worker lacks the remote")
	}
	ocancel()
	if err := <-done; err == nil {
		t.Fatal("the task was run with no worker that has the remote")
	}
	if nopeRan.Load() != 0 {
		t.Fatal("a worker not given the run's git remote ran its task")
	}

	join("far", []string{bare}, &farRan)
	o, err := pool.Workers()[0].Run(ctx, a, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if farRan.Load() != 1 || nopeRan.Load() != 0 {
		t.Fatalf("runs: far %d, nope %d; want far once", farRan.Load(), nopeRan.Load())
	}
	if got := git(t, repo.Root, "rev-parse", a.Branch); got != o.Commit {
		t.Fatalf("branch at %s, outcome %s", got, o.Commit)
	}
	if by := git(t, repo.Root, "show", o.Commit+":by.txt"); !strings.HasPrefix(by, "far-") {
		t.Fatalf("task ran on %q, want far", by)
	}
	// The remote has the base and no result left; the bundle store has
	// neither.
	if got := git(t, bare, "rev-parse", "refs/weave/base/"+base); got != base {
		t.Errorf("the remote's base ref = %s, want %s", got, base)
	}
	if left := git(t, bare, "for-each-ref", "refs/weave/results/"); left != "" {
		t.Errorf("result refs left on the remote: %s", left)
	}
	store, err := workers.OpenStore(ctx, newBus(t, ns.URL()).JetStream())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, "base-"+base); !errors.Is(err, workers.ErrMissing) {
		t.Errorf("the bundle store has the base (%v); want the remote alone to carry it", err)
	}
}

// A remote whose URL holds a password is refused: every worker would see
// it in the offers.
func TestGitRemoteURLRefusesPassword(t *testing.T) {
	repo := newRepo(t, true)
	git(t, repo.Root, "remote", "add", "origin", "https://me:s3cret-pw@git.example/p.git")
	_, err := remote.GitRemoteURL(context.Background(), repo, "origin")
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "password") {
		t.Fatalf("GitRemoteURL = %v, want a refusal that does not repeat the password", err)
	}
	git(t, repo.Root, "remote", "add", "tok", "https://ghp_s3cretToken@git.example/p.git")
	if _, err := remote.GitRemoteURL(context.Background(), repo, "tok"); err == nil || strings.Contains(err.Error(), "s3cretToken") {
		t.Fatalf("GitRemoteURL of a URL with a token = %v, want a refusal that does not repeat it", err)
	}
	git(t, repo.Root, "remote", "add", "ssh", "ssh://git@git.example/p.git")
	if u, err := remote.GitRemoteURL(context.Background(), repo, "ssh"); err != nil || u != "ssh://git@git.example/p.git" {
		t.Fatalf("GitRemoteURL of an ssh URL = %q, %v", u, err)
	}
	if _, err := remote.GitRemoteURL(context.Background(), repo, "upstream"); err == nil || !strings.Contains(err.Error(), "git remote -v") {
		t.Fatalf("GitRemoteURL of a missing remote = %v", err)
	}
}
