package run

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/run/runtest"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
)

// These tests are a run with workers that died at each point of a task's
// way (work committed on its branch, landed on the integration branch,
// neither) and the next start-work settling what it left: no task ticked
// without its landed verify, no commit landed twice, no committed work
// lost.

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

type crash struct {
	// committed: the task's work is committed on its branch; recorded:
	// state.json has that commit; landed: it is on the integration branch.
	committed, recorded, landed bool
}

// crashedRun makes the project a run with workers left at c, and returns
// the project and the file each run of the task's work block adds a line
// to; failOnce makes the task's verify block fail once.
func crashedRun(t *testing.T, c crash, failOnce bool) (project, runs string) {
	t.Helper()
	m := t.TempDir()
	runs = filepath.Join(m, "runs")
	fail := filepath.Join(m, "fail")
	if failOnce {
		if err := os.WriteFile(fail, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	project = runtest.NewProject(t, map[string]string{"p": plan(
		task(1, "Make k", "echo run >> "+runs+"; echo k > k.txt", "if [ -e "+fail+" ]; then rm "+fail+"; exit 1; fi; test -f k.txt"),
	)})
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "T"}, {"config", "user.email", "t@example.com"},
		{"add", "-A"}, {"commit", "-q", "-m", "start"}} {
		gitRun(t, project, args...)
	}
	ctx := context.Background()
	repo, err := gitwork.Open(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	head := gitRun(t, project, "rev-parse", "HEAD")
	p, err := plans.Find(project, "p")
	if err != nil {
		t.Fatal(err)
	}
	tk := p.Tasks[0]
	gitRun(t, project, "branch", "weave/p", head)
	rec := &plans.Running{Number: 1, Title: tk.Title, Worker: "1", Worktree: ".weave/worktrees/p/w1", Branch: "weave/p-task-1", Base: head,
		AttemptID: "att_1", Attempt: 1, StartedAt: time.Now()}
	if c.committed {
		wt := filepath.Join(project, ".weave", "worktrees", "p", "w1")
		if err := repo.Worktree(ctx, wt, rec.Branch, head); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wt, "k.txt"), []byte("k\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sha, err := repo.Commit(ctx, wt, tk.Title, []gitwork.Trailer{{Key: gitwork.TrailerPlan, Value: "p"}, {Key: gitwork.TrailerTask, Value: "1"},
			{Key: gitwork.TrailerAttempt, Value: rec.AttemptID}})
		if err != nil {
			t.Fatal(err)
		}
		if c.recorded {
			rec.Commit = sha
		}
		if c.landed {
			landed, err := repo.Land(ctx, head, sha, gitwork.LandRebase)
			if err != nil {
				t.Fatal(err)
			}
			if err := repo.UpdateRef(ctx, "refs/heads/weave/p", landed, head); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := plans.NewState(p.Path, "p", "tapestry", head, time.Now())
	st.Integration = &plans.Integration{Branch: "weave/p", Base: head, From: "main"}
	st.Running = map[string]*plans.Running{tk.Key(): rec}
	if err := plans.ProjectStore(project).Save(st); err != nil {
		t.Fatal(err)
	}
	return project, runs
}

func runsOf(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

func TestWorkersRecoverAfterACrash(t *testing.T) {
	for _, tc := range []struct {
		name     string
		crash    crash
		failOnce bool
		// runs is how often the task's work block runs again; subjects
		// are the commits on weave/p since the start, newest first.
		runs     int
		subjects string
	}{
		{"nothing committed: it runs again", crash{}, false, 1, "Make k"},
		{"committed, not recorded: it lands", crash{committed: true}, false, 0, "Make k"},
		{"committed and recorded: it lands", crash{committed: true, recorded: true}, false, 0, "Make k"},
		{"landed, not ticked: verified and ticked, not landed again", crash{committed: true, recorded: true, landed: true}, false, 0, "Make k"},
		{"landed, its verify fails there: reverted and run again", crash{committed: true, recorded: true, landed: true}, true, 1, "Make k\nRevert \"Make k\"\nMake k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			project, runs := crashedRun(t, tc.crash, tc.failOnce)
			cfg := config.Default()
			cfg.Run.Workers = 2
			rec := &recorder{}
			res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg, Observe: rec.observe})
			if err != nil || res.Status != StatusDone {
				t.Fatalf("StartWork = %v, %v (%v); events %v", res.Status, err, res.Err, rec.types())
			}
			if got := runsOf(t, runs); got != tc.runs {
				t.Errorf("the task's work ran %d time(s) again, want %d", got, tc.runs)
			}
			if got := gitRun(t, project, "log", "--format=%s", "main..weave/p"); got != tc.subjects {
				t.Errorf("commits on weave/p:\n%s\nwant\n%s", got, tc.subjects)
			}
			if got := gitRun(t, project, "show", "weave/p:k.txt"); got != "k" {
				t.Errorf("k.txt on weave/p = %q", got)
			}
			if p := readPlan(t, project, "p"); !strings.Contains(p, "- [x] 1.") {
				t.Errorf("plan:\n%s\nwant task 1 ticked", p)
			}
			if _, err := os.Stat(filepath.Join(project, ".weave", "state.json")); !os.IsNotExist(err) {
				t.Errorf("state.json after the plan is done: %v", err)
			}
		})
	}
}

// TestWorkersCleanUpAfterAKillInTheirCleanUp: a run with workers killed
// after its last tick, while it removed its worktrees (their directories
// gone, git still recording them), leaves nothing behind once start-work
// runs again: git forgets the worktrees, the task branches go, and the
// work state is cleared.
func TestWorkersCleanUpAfterAKillInTheirCleanUp(t *testing.T) {
	project, _ := crashedRun(t, crash{committed: true, recorded: true, landed: true}, false)
	path := filepath.Join(project, ".weave", "plans", "p.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "- [ ] 1.", "- [x] 1.", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(project, ".weave", "worktrees")); err != nil {
		t.Fatal(err)
	}
	if got := gitRun(t, project, "worktree", "list", "--porcelain"); !strings.Contains(got, "prunable") {
		t.Fatalf("the set-up left no worktree git still records:\n%s", got)
	}
	cfg := config.Default()
	cfg.Run.Workers = 2
	res, err := StartWork(context.Background(), Options{Project: project, Name: "p", Config: cfg})
	if err != nil || res.Status != StatusComplete {
		t.Fatalf("StartWork = %v, %v (%v), want the plan complete", res.Status, err, res.Err)
	}
	if got := gitRun(t, project, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("worktrees after start-work on the finished plan:\n%s\nwant the main one only", got)
	}
	if got := gitRun(t, project, "branch", "--list", "weave/p-task-*"); got != "" {
		t.Errorf("task branches left: %s", got)
	}
	if _, err := os.Stat(filepath.Join(project, ".weave", "state.json")); !os.IsNotExist(err) {
		t.Errorf("state.json after the plan is done: %v", err)
	}
}
