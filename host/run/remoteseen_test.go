package run

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/run/runtest"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
)

// farWorker stands for a slot of a run coordinated over NATS: it reports
// its task's award to a worker on the bus and that worker's heartbeats, as
// host/remote's pool does, checks what state.json says after each, and has
// the local worker do the work. A report of another attempt of the task (a
// stale award) must change nothing.
type farWorker struct {
	t     *testing.T
	local Worker
	store *plans.Store
	// saw is what state.json said after each report.
	saw []plans.Running
}

func (w *farWorker) Name() string { return "net1" }

func (w *farWorker) Run(ctx context.Context, a Assignment, out io.Writer) (Outcome, error) {
	key := a.Task.Key()
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, ev := range []Event{
		{Type: EventWorkAwarded, WorkerName: "far", WorkerLabels: []string{"gpu", "os=linux"}, Time: at},
		{Type: EventWorkRenewed, WorkerName: "far", Time: at.Add(5 * time.Second)},
	} {
		a.Report(ev)
		w.saw = append(w.saw, w.waitRecord(key, func(r plans.Running) bool { return r.Heartbeat.Equal(ev.Time) }))
	}
	// A lost worker: the task shows on its slot again.
	a.Report(Event{Type: EventWorkLost, WorkerName: "far", Reason: "silent"})
	w.saw = append(w.saw, w.waitRecord(key, func(r plans.Running) bool { return r.Heartbeat.IsZero() }))
	return w.local.Run(ctx, a, out)
}

// waitRecord waits until state.json's record of key satisfies ok.
func (w *farWorker) waitRecord(key string, ok func(plans.Running) bool) plans.Running {
	w.t.Helper()
	guard := time.Now().Add(30 * time.Second)
	for {
		st, _, err := w.store.Load()
		if err == nil && st != nil && st.Running[key] != nil && ok(*st.Running[key]) {
			return *st.Running[key]
		}
		if time.Now().After(guard) {
			w.t.Errorf("state.json never recorded the report for task %s: %+v", key, st)
			return plans.Running{}
		}
		time.Sleep(10 * time.Millisecond) // polling the file, not waiting a duration out
	}
}

// A run whose task goes to a worker on the bus records that worker's name,
// labels and last heartbeat in state.json as they are reported; a lost
// worker gives the task back to its slot.
func TestRunRecordsRemoteWorker(t *testing.T) {
	project := runtest.NewProject(t, map[string]string{"p": plan(task(1, "Make k", "echo k > k.txt", "test -f k.txt"))})
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "T"}, {"config", "user.email", "t@example.com"},
		{"add", "-A"}, {"commit", "-q", "-m", "start"}} {
		gitRun(t, project, args...)
	}
	cfg := config.Default()
	cfg.Run.Workers = 2
	var far *farWorker
	rec := &recorder{}
	o := Options{Project: project, Name: "p", Config: cfg, Observe: rec.observe,
		Pool: func(_ context.Context, _ string, _ *gitwork.Repo, local []Worker) ([]Worker, error) {
			far = &farWorker{t: t, local: local[0], store: plans.ProjectStore(project)}
			return []Worker{far}, nil
		}}
	res, err := StartWork(context.Background(), o)
	if err != nil || res.Status != StatusDone {
		t.Fatalf("StartWork = %v, %v (%v); events %v", res.Status, err, res.Err, rec.types())
	}
	if len(far.saw) != 3 {
		t.Fatalf("records seen: %+v", far.saw)
	}
	awarded, renewed, lost := far.saw[0], far.saw[1], far.saw[2]
	if awarded.Worker != "far" || !slices.Equal(awarded.Labels, []string{"gpu", "os=linux"}) {
		t.Errorf("after the award, state.json has %+v, want worker far [gpu os=linux]", awarded)
	}
	if renewed.Worker != "far" || len(renewed.Labels) != 2 || !renewed.Heartbeat.After(awarded.Heartbeat) {
		t.Errorf("after a heartbeat, state.json has %+v, want far with its labels and a later heartbeat than %v", renewed, awarded.Heartbeat)
	}
	if lost.Worker != "net1" || lost.Labels != nil {
		t.Errorf("after the worker was lost, state.json has %+v, want the task back on slot net1", lost)
	}
}

// A report of an attempt that is no longer the task's changes nothing.
func TestSeenBoardIgnoresStaleAttempt(t *testing.T) {
	b := newSeenBoard()
	b.reporter("1", "att_old")(Event{Type: EventWorkAwarded, WorkerName: "ghost", Time: time.Now()})
	c := &coordinator{r: &runner{st: &plans.State{Running: map[string]*plans.Running{"1": {Worker: "net1", AttemptID: "att_new"}}}},
		running: map[string]*job{"1": {slot: 0}}, seen: b}
	// recordSeen must not touch the record of another attempt; it saves
	// only when something changed, so no store is needed here.
	c.recordSeen()
	if w := c.r.st.Running["1"].Worker; w != "net1" {
		t.Errorf("a stale report moved the task to %q", w)
	}
}
