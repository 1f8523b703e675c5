package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/plans"
)

// A run with workers recorded in state.json: status (text, piped and
// --json) shows its integration branch and each running task, by worker.
func TestStatusShowsRunningTasks(t *testing.T) {
	dir := project(t, map[string]string{"p": revertPlan})
	store := plans.ProjectStore(dir)
	started := time.Now().Add(-90 * time.Second).UTC()
	st := &plans.State{
		SchemaVersion: plans.SchemaVersion, ActivePlan: filepath.Join(dir, ".weave", "plans", "p.md"), PlanName: "p", StartedAt: started,
		Integration: &plans.Integration{Branch: "weave/p", Base: "1111111", From: "main"},
		Running: map[string]*plans.Running{
			"2": {Number: 2, Title: "Add b", Worker: "2", Worktree: ".weave/worktrees/p/w2", Branch: "weave/p-task-2", Base: "1111111", AttemptID: "att_2", Attempt: 1, StartedAt: started, Commit: "2222222", Landing: true},
			"1": {Number: 1, Title: "Add a", Worker: "1", Worktree: ".weave/worktrees/p/w1", Branch: "weave/p-task-1", Base: "1111111", AttemptID: "att_1", Attempt: 2, StartedAt: started},
		},
	}
	if err := store.Save(st); err != nil {
		t.Fatal(err)
	}
	release, err := store.Lock() // the run that drives it
	if err != nil {
		t.Fatal(err)
	}
	r := runBin(t, nil, "", "--dir", dir, "status", "--json")
	var got struct {
		Plans []struct {
			Name        string
			State       string
			Integration struct{ Branch, Base, From string }
			Running     []struct {
				Worker, Title, Branch, Worktree, Base, Commit string
				Task, Attempt                                 int
				StartedAt                                     string `json:"started_at"`
				ForSeconds                                    int64  `json:"for_seconds"`
				Landing, Interrupted                          bool
			}
		}
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || len(got.Plans) != 1 {
		t.Fatalf("status --json = %v %q", err, r.out)
	}
	p := got.Plans[0]
	if p.State != "running" || p.Integration.Branch != "weave/p" || p.Integration.From != "main" || len(p.Running) != 2 {
		t.Fatalf("status --json plan = %+v, want running on weave/p with two tasks", p)
	}
	w1, w2 := p.Running[0], p.Running[1]
	if w1.Worker != "1" || w1.Task != 1 || w1.Branch != "weave/p-task-1" || w1.Attempt != 2 || w1.ForSeconds < 89 || w1.StartedAt == "" || w1.Interrupted {
		t.Errorf("running[0] = %+v, want worker 1 on task 1, attempt 2, for 90s", w1)
	}
	if w2.Worker != "2" || w2.Task != 2 || w2.Commit != "2222222" || !w2.Landing || w2.Worktree != ".weave/worktrees/p/w2" {
		t.Errorf("running[1] = %+v, want worker 2 on task 2, landing its commit", w2)
	}

	// Piped: the detail column names the running tasks.
	r = runBin(t, nil, "", "--dir", dir, "status")
	if !strings.Contains(r.out, "running: 1 (worker 1), 2 (worker 2)") {
		t.Errorf("piped status = %q, want the running tasks in the detail", r.out)
	}
	release()

	// The run died: its tasks show as interrupted.
	r = runBin(t, nil, "", "--dir", dir, "status", "--json")
	if !strings.Contains(r.out, `"interrupted": true`) || !strings.Contains(r.out, `"state": "active"`) {
		t.Errorf("status --json after the run died = %s, want its tasks interrupted", r.out)
	}
}

func TestStatusTextShowsWorkers(t *testing.T) {
	dir := project(t, map[string]string{"p": revertPlan})
	store := plans.ProjectStore(dir)
	started := time.Now().Add(-12 * time.Second).UTC()
	st := &plans.State{
		SchemaVersion: plans.SchemaVersion, ActivePlan: filepath.Join(dir, ".weave", "plans", "p.md"), PlanName: "p",
		Integration: &plans.Integration{Branch: "weave/p", Base: "1111111", From: "main"},
		Running: map[string]*plans.Running{
			"3": {Number: 3, Title: "Extend a", Worker: "1", Branch: "weave/p-task-3", StartedAt: started, Commit: "3333333"},
		},
	}
	if err := store.Save(st); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	s := &Streams{Out: &out, ErrOut: &out, Terminal: true, Width: 100}
	release, err := store.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := printStatus(t.Context(), &statusOptions{globalOptions: &globalOptions{Dir: dir}, Streams: s}, dir); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lands on: weave/p (from main)", "worker 1: task 3 (Extend a) on weave/p-task-3, committed, waiting to land, for 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status = %q, want %q", out.String(), want)
		}
	}
}

// A task of a run coordinated over NATS, on a worker joined over the bus:
// status names that worker with its labels and last heartbeat (text and
// --json), and the piped detail names it too.
func TestStatusShowsRemoteWorker(t *testing.T) {
	dir := project(t, map[string]string{"p": revertPlan})
	store := plans.ProjectStore(dir)
	started := time.Now().Add(-40 * time.Second).UTC()
	beat := time.Now().Add(-7 * time.Second).UTC()
	st := &plans.State{
		SchemaVersion: plans.SchemaVersion, ActivePlan: filepath.Join(dir, ".weave", "plans", "p.md"), PlanName: "p", StartedAt: started,
		Integration: &plans.Integration{Branch: "weave/p", Base: "1111111", From: "main"},
		Running: map[string]*plans.Running{
			"2": {Number: 2, Title: "Add b", Worker: "big", Labels: []string{"gpu", "os=linux"}, Heartbeat: beat, Branch: "weave/p-task-2", Base: "1111111", AttemptID: "att_2", Attempt: 1, StartedAt: started},
			"1": {Number: 1, Title: "Add a", Worker: "1", Worktree: ".weave/worktrees/p/w1", Branch: "weave/p-task-1", Base: "1111111", AttemptID: "att_1", Attempt: 1, StartedAt: started},
		},
	}
	if err := store.Save(st); err != nil {
		t.Fatal(err)
	}
	release, err := store.Lock() // the run that drives it
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	r := runBin(t, nil, "", "--dir", dir, "status", "--json")
	var got struct {
		Plans []struct {
			Running []struct {
				Worker        string
				Task          int
				Labels        []string
				LastHeartbeat string `json:"last_heartbeat"`
				SilentSeconds *int64 `json:"silent_seconds"`
			}
		}
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || len(got.Plans) != 1 || len(got.Plans[0].Running) != 2 {
		t.Fatalf("status --json = %v %q", err, r.out)
	}
	local, far := got.Plans[0].Running[0], got.Plans[0].Running[1]
	if far.Worker != "big" || far.Task != 2 || strings.Join(far.Labels, ",") != "gpu,os=linux" || far.LastHeartbeat != beat.Format(time.RFC3339) ||
		far.SilentSeconds == nil || *far.SilentSeconds < 6 {
		t.Errorf("the remote worker's task in status --json = %+v, want big [gpu os=linux], heard of 7s ago", far)
	}
	if local.Worker != "1" || local.LastHeartbeat != "" || local.SilentSeconds != nil || local.Labels != nil {
		t.Errorf("the local worker's task in status --json = %+v, want no labels nor heartbeat", local)
	}

	var out strings.Builder
	s := &Streams{Out: &out, ErrOut: &out, Terminal: true, Width: 120}
	if err := printStatus(t.Context(), &statusOptions{globalOptions: &globalOptions{Dir: dir}, Streams: s}, dir); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`worker big \[gpu,os=linux\]: task 2 \(Add b\) on weave/p-task-2, for 4\ds, last heartbeat \ds ago`).MatchString(out.String()) {
		t.Errorf("status = %q, want the remote worker with its labels and last heartbeat", out.String())
	}
	r = runBin(t, nil, "", "--dir", dir, "status")
	if !strings.Contains(r.out, "running: 1 (worker 1), 2 (worker big)") {
		t.Errorf("piped status = %q, want the remote worker named in the detail", r.out)
	}
}
