package run

import (
	"sync"
	"time"
)

// The work.* events of a run coordinated over NATS (host/remote) say which
// worker on the bus has a task, what it offers and when it was last heard
// of. They come from the pool's goroutines, often while the run is busy
// landing; the seen board keeps the latest of each task, and the run's one
// goroutine copies it into state.json's Running records, so that `weave
// status` shows a remote worker by its name, labels and last heartbeat.

// Event types of a run coordinated over NATS that the run records.
const (
	// EventWorkAwarded: the task went to WorkerName (offering WorkerLabels).
	EventWorkAwarded = "work.awarded"
	// EventWorkRenewed: WorkerName's heartbeat renewed its lease.
	EventWorkRenewed = "work.renewed"
	// EventWorkLost: WorkerName went silent; the task is offered again.
	EventWorkLost = "work.lost"
)

// seenTask is what the run last heard of a task's remote worker.
type seenTask struct {
	attemptID string
	worker    string
	labels    []string
	heartbeat time.Time
}

// seenBoard collects the reports of the tasks running; it never blocks the
// reporter.
type seenBoard struct {
	mu    sync.Mutex
	tasks map[string]seenTask
	// dirty are the tasks with news since the last take.
	dirty map[string]bool
	// wake has a value when tasks has news.
	wake chan struct{}
}

func newSeenBoard() *seenBoard {
	return &seenBoard{tasks: map[string]seenTask{}, dirty: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// reporter is the Assignment.Report of attempt attemptID of the task key.
func (b *seenBoard) reporter(key, attemptID string) func(Event) {
	return func(ev Event) {
		b.mu.Lock()
		s := b.tasks[key]
		if s.attemptID != attemptID {
			s = seenTask{attemptID: attemptID}
		}
		switch ev.Type {
		case EventWorkAwarded:
			s.worker, s.labels, s.heartbeat = ev.WorkerName, ev.WorkerLabels, ev.Time
		case EventWorkRenewed:
			if s.worker != ev.WorkerName {
				s.worker, s.labels = ev.WorkerName, nil
			}
			s.heartbeat = ev.Time
		case EventWorkLost:
			s.worker, s.labels, s.heartbeat = "", nil, time.Time{}
		default:
			b.mu.Unlock()
			return
		}
		b.tasks[key], b.dirty[key] = s, true
		b.mu.Unlock()
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// take returns the tasks with news since the last take.
func (b *seenBoard) take() map[string]seenTask {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]seenTask, len(b.dirty))
	for key := range b.dirty {
		out[key] = b.tasks[key]
	}
	clear(b.dirty)
	return out
}

// recordSeen copies the board into the Running records of the tasks still
// on the same attempt and writes state.json when one changed. A task whose
// worker was lost is shown on its slot again until the next award.
func (c *coordinator) recordSeen() {
	r := c.r
	changed := false
	for key, s := range c.seen.take() {
		rec := r.st.Running[key]
		j := c.running[key]
		if rec == nil || j == nil || rec.AttemptID != s.attemptID {
			continue
		}
		worker := s.worker
		if worker == "" && j.slot >= 0 {
			worker = c.workers[j.slot].Name()
		}
		rec.Worker, rec.Labels, rec.Heartbeat = worker, s.labels, s.heartbeat.UTC()
		if s.heartbeat.IsZero() {
			rec.Heartbeat = time.Time{}
		}
		changed = true
	}
	if changed {
		// A failed write is mended by the next report or the next step.
		_ = r.save()
	}
}
