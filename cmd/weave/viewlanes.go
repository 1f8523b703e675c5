package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weavehq/weave/host/run"
)

// A run with workers shows, instead of the one task in flight, a lane per
// worker (its task, how long it has run, its last line of output) and the
// landing queue: the tasks committed on their branches, the one landing
// first. A run of one task at a time has no lanes and looks as it always
// did.

// lane is what one worker is doing.
type lane struct {
	task  string
	num   int
	start time.Time
	last  string
	// remote names the worker on the bus its task was awarded to, with
	// its labels ("" for a local worker, or while the task waits for a
	// bid after its worker was lost); beat is when it was last heard of.
	remote string
	beat   time.Time
}

// queued is a task waiting to land, or landing.
type queued struct {
	num     int
	title   string
	landing bool
}

// lanes is the live view's state of a run with workers.
type lanes struct {
	// workers is how many the run has (plan.started), so that idle ones
	// show too; lanes of workers seen beyond it show as they come.
	workers int
	byW     map[int]lane
	queue   []queued
}

// active reports whether the view draws lanes.
func (l *lanes) active() bool { return l.workers > 1 || len(l.byW) > 0 }

// applyRunEvent keeps the lanes' state across the run's own events (no
// worker): how many workers it has, and nothing running once it ends.
func (m liveModel) applyRunEvent(ev run.Event) liveModel {
	switch ev.Type {
	case run.EventPlanStarted:
		m.lanes = lanes{workers: ev.Workers}
	case run.EventPlanDone, run.EventPlanPaused:
		// Nothing runs any more: the last frame is the plan's line alone.
		m.lanes = lanes{}
	}
	return m
}

// applyWorkerEvent folds an event of a worker (ev.Worker > 0) into the
// model and returns what to print above the panel. Only task.done moves
// the progress: a worker's other events carry the progress of when its
// task started.
func (m liveModel) applyWorkerEvent(ev run.Event) (liveModel, string) {
	if ev.Type == run.EventTaskDone {
		m.completed, m.total = ev.Completed, ev.Total
	}
	l := &m.lanes
	// The model's maps and slices are shared with earlier copies of it
	// (Observe and the program each hold one): copy before changing.
	byW := make(map[int]lane, len(l.byW)+1)
	for k, v := range l.byW {
		byW[k] = v
	}
	l.byW, l.queue = byW, slices.Clone(l.queue)
	var printed string
	switch ev.Type {
	case run.EventTaskStarted:
		byW[ev.Worker] = lane{task: fmt.Sprintf("%d%s. %s%s", ev.Task, gateNote(ev), ev.Title, attemptNote(ev.Attempt)), num: ev.Task, start: ev.Time}
	case run.EventTaskOutput, run.EventModelDelta, run.EventModelToolCall, run.EventModelCompacting, run.EventModelCompacted:
		if ln, ok := byW[ev.Worker]; ok {
			text := ev.Output
			if ev.Type == run.EventModelToolCall {
				text = fmt.Sprintf("[%s] → %s", ev.Agent, ev.Tool)
			}
			// The last line that says something: a delta may end a line.
			if s := strings.TrimSpace(printable(lastLine(text))); s != "" {
				ln.last = s
				byW[ev.Worker] = ln
			}
		}
	case run.EventTaskCommitted:
		l.queue = append(l.queue, queued{num: ev.Task, title: ev.Title})
		l.free(ev)
	case run.EventTaskLanding:
		for i := range l.queue {
			if l.queue[i].num == ev.Task {
				l.queue[i].landing = true
			}
		}
	case run.EventTaskDone:
		l.dequeue(ev.Task)
		l.free(ev)
		printed = fmt.Sprintf("%s %d. %s  %s", m.pal.ok.Render("✓"), ev.Task, ev.Title, m.pal.dim.Render(millis(ev.ElapsedMS)+" · worker "+fmt.Sprint(ev.Worker)))
	case run.EventTaskFailed:
		l.free(ev)
		printed = fmt.Sprintf("%s %d. %s: %s", m.pal.bad.Render("✗"), ev.Task, ev.Title, ev.Error)
		if ev.Retry {
			printed += " (retrying)"
		}
	case run.EventTaskConflict:
		l.dequeue(ev.Task)
		printed = fmt.Sprintf("%s %d. %s did not land: %s", m.pal.warn.Render("↺"), ev.Task, ev.Title, ev.Error)
		if ev.Retry {
			printed += " (running again on the new head)"
		}
	}
	return m, printed
}

// applyWorkEvent folds an event of a run coordinated over NATS (work.*,
// with the worker's name, not its lane) into the lane of its task: who
// has the task, what it offers, and its last heartbeat. It moves no
// progress. A lost worker is said above the panel.
func (m liveModel) applyWorkEvent(ev run.Event) (liveModel, string) {
	w, ln, ok := m.lanes.laneOf(ev.Task)
	if !ok {
		return m, ""
	}
	var printed string
	switch ev.Type {
	case run.EventWorkAwarded:
		ln.remote = ev.WorkerName
		if len(ev.WorkerLabels) > 0 {
			ln.remote += " [" + strings.Join(ev.WorkerLabels, ",") + "]"
		}
		ln.beat = ev.Time
	case run.EventWorkRenewed:
		if name, _, _ := strings.Cut(ln.remote, " ["); name != ev.WorkerName {
			ln.remote = ev.WorkerName
		}
		ln.beat = ev.Time
	case run.EventWorkLost:
		printed = fmt.Sprintf("%s %s: worker %s lost it (%s); offering it again", m.pal.warn.Render("↺"), ln.task, ev.WorkerName, ev.Reason)
		ln.remote, ln.beat = "", time.Time{}
	default:
		return m, ""
	}
	byW := make(map[int]lane, len(m.lanes.byW))
	for k, v := range m.lanes.byW {
		byW[k] = v
	}
	byW[w] = ln
	m.lanes.byW = byW
	return m, printed
}

// laneOf finds the lane whose task is task.
func (l *lanes) laneOf(task int) (int, lane, bool) {
	for w, ln := range l.byW {
		if ln.num == task {
			return w, ln, true
		}
	}
	return 0, lane{}, false
}

// free empties the lane of ev's worker when it is still on ev's task.
func (l *lanes) free(ev run.Event) {
	if ln, ok := l.byW[ev.Worker]; ok && ln.num == ev.Task {
		delete(l.byW, ev.Worker)
	}
}

func (l *lanes) dequeue(task int) {
	l.queue = slices.DeleteFunc(l.queue, func(q queued) bool { return q.num == task })
}

// viewLanes draws the lanes and the queue.
func (m liveModel) viewLanes(b *strings.Builder) {
	n := m.lanes.workers
	for w := range m.lanes.byW {
		n = max(n, w)
	}
	for w := 1; w <= n; w++ {
		ln, ok := m.lanes.byW[w]
		if !ok {
			fmt.Fprintf(b, "w%d %s\n", w, m.pal.dim.Render("· idle"))
			continue
		}
		elapsed := m.now().Sub(ln.start).Truncate(100 * time.Millisecond)
		fmt.Fprintf(b, "w%d ▸ %s  %s\n", w, clip(ln.task, m.width-16), elapsed)
		if ln.remote != "" {
			silent := max(m.now().Sub(ln.beat), 0).Truncate(time.Second)
			fmt.Fprintf(b, "   %s\n", m.pal.dim.Render(clip(fmt.Sprintf("on %s · last heartbeat %s ago", ln.remote, silent), m.width-3)))
		}
		if ln.last != "" {
			fmt.Fprintf(b, "   │ %s\n", clip(ln.last, m.width-5))
		}
	}
	if len(m.lanes.queue) == 0 {
		return
	}
	var landing, waiting []string
	for _, q := range m.lanes.queue {
		name := fmt.Sprintf("%d. %s", q.num, q.title)
		if q.landing {
			landing = append(landing, name)
		} else {
			waiting = append(waiting, name)
		}
	}
	var parts []string
	if len(landing) > 0 {
		parts = append(parts, "landing "+strings.Join(landing, ", "))
	}
	if len(waiting) > 0 {
		parts = append(parts, "waiting to land "+strings.Join(waiting, ", "))
	}
	fmt.Fprintf(b, "%s\n", clip("⇢ "+strings.Join(parts, " · "), m.width))
}

// lastLine is the last line of s that is not empty.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\r\n"), "\n")
	return lines[len(lines)-1]
}
