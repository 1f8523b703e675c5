package run

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/weavehq/weave/plugins"
)

// Event types of a start-work run, in the order a run emits them.
const (
	EventPlanStarted = "plan.started"
	EventTaskStarted = "task.started"
	EventTaskOutput  = "task.output"
	EventTaskDone    = "task.done"
	EventTaskFailed  = "task.failed"
	EventPlanPaused  = "plan.paused"
	EventPlanDone    = "plan.done"
	// Events of a run with workers (start-work --workers N): a task's work
	// committed on its branch in its worktree (Commit, Branch), its landing
	// on the integration branch begun (task.landing), and done (Commit is
	// the landed commit; task.done follows once its verify blocks passed
	// there and its box is ticked). task.conflict says the task could not
	// land (Error names the files, or the verify block that failed on the
	// landed tree); Retry says it runs again on the new head.
	EventTaskCommitted = "task.committed"
	EventTaskLanding   = "task.landing"
	EventTaskLanded    = "task.landed"
	EventTaskConflict  = "task.conflict"
	// EventWarning carries a problem that does not stop the run.
	EventWarning = "warning"
	// EventModelDelta carries a piece of an agent's model text (in Output)
	// as it arrives; EventModelToolCall a tool call the model began (Tool).
	EventModelDelta    = "model.delta"
	EventModelToolCall = "model.tool_call"
	// EventModelCompacted says an agent's conversation was compacted: its
	// earlier part replaced by a summary (Output says how many tokens it
	// went from and to).
	EventModelCompacted = "model.compacted"
	// EventModelUsage ends an agent's model call: its token use (Usage) and
	// cost (CostUSD, absent when its model's price is unknown).
	EventModelUsage = "model.usage"
	// EventModelCompacting says an agent's conversation is being compacted
	// (Output says what the summary covers); EventModelCompacted follows.
	EventModelCompacting = "model.compacting"
)

// Event is one step of a start-work run. It is what the live view draws and
// what `--json` prints, one per line.
type Event struct {
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	Plan string    `json:"plan"`
	// Task is the task's number in the plan, or its position (1-based) when
	// the task is not numbered.
	Task  int    `json:"task,omitempty"`
	Title string `json:"title,omitempty"`
	// Verification marks a task of the plan's Verification checklist, its
	// final gate (task events).
	Verification bool `json:"verification,omitempty"`
	// Completed and Total are the plan's progress after the event.
	Completed int `json:"completed"`
	Total     int `json:"total"`
	Attempt   int `json:"attempt,omitempty"`
	// Output is one line of a task's output (task.output).
	Output string `json:"output,omitempty"`
	// Error says why a task failed; Reason why a plan paused.
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Retry is set on task.failed when the task will be tried again.
	Retry bool `json:"retry,omitempty"`
	// Log is the task's log file (task.started).
	Log string `json:"log,omitempty"`
	// Resumed is set on plan.started when the run continues an earlier one.
	Resumed bool `json:"resumed,omitempty"`
	// ElapsedMS is how long the task ran (task.done, task.failed), in
	// milliseconds, the unit of every duration weave prints as JSON.
	ElapsedMS int64 `json:"elapsed_ms,omitempty"`
	// Agent and Tool are set on model events: the agent whose model spoke
	// and the tool it began to call.
	Agent string `json:"agent,omitempty"`
	Tool  string `json:"tool,omitempty"`
	// Verdict is a reviewer's verdict (review): approve, reject or none.
	Verdict string `json:"verdict,omitempty"`
	// Worker is the worker a task event comes from (1-based) in a run with
	// workers; 0 in a run of one task at a time.
	Worker int `json:"worker,omitempty"`
	// Worktree, Branch and BaseRef say where a worker's task runs: its
	// worktree (relative to the project), its branch and the commit of the
	// integration branch it started from (task.started of a worker).
	Worktree string `json:"worktree,omitempty"`
	Branch   string `json:"branch,omitempty"`
	BaseRef  string `json:"base_ref,omitempty"`
	// Commit is the task's commit (task.committed) or the landed commit
	// (task.landed).
	Commit string `json:"commit,omitempty"`
	// MaxAttempts is a task's limit of attempts (1 + runbook.retries).
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Workers is how many workers a run with workers has (plan.started);
	// 0 in a run of one task at a time.
	Workers int `json:"workers,omitempty"`
	// WorkerName names the worker a task was awarded to in a run
	// coordinated over NATS (work.* events, host/remote).
	WorkerName string `json:"worker_name,omitempty"`
	// WorkerLabels are what that worker offers (work.awarded).
	WorkerLabels []string `json:"worker_labels,omitempty"`
	// Usage is a model call's token use (model.usage).
	Usage *plugins.Usage `json:"usage,omitempty"`
	// CostUSD is what a model call cost (model.usage) or a task's calls
	// did (task.done), in US dollars; absent when a price was unknown.
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// Observer receives a run's events in order. It must not block for long:
// the run waits for it.
type Observer func(Event)

// lineEmitter turns a task's output stream into task.output events, one per
// line, and copies every byte to the task's log.
type lineEmitter struct {
	mu   sync.Mutex
	log  interface{ Write([]byte) (int, error) }
	emit func(line string)
	buf  []byte
}

func (w *lineEmitter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log != nil {
		if _, err := w.log.Write(p); err != nil {
			// A full disk must not fail the task; the terminal still shows it.
			w.log = nil
		}
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(bytes.TrimRight(w.buf[:i], "\r")))
		w.buf = w.buf[i+1:]
	}
	// Bound a line that never ends (a progress spinner, binary output).
	if len(w.buf) > 64<<10 {
		w.emit(string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// flush emits a last line that had no newline.
func (w *lineEmitter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = w.buf[:0]
	}
}

// runnerEvents are the hook events the runner fires itself (runner.fire),
// each from one place: command.execute.before as it resolves the plan,
// session.start and session.end around the tasks, session.idle when an
// agent's turn ends with its task open, plan.task.done as a task is ticked
// and plan.todos.done once the plan's TODOs are. (notification, when a run
// pauses, is not among them: not every run fires it.) TestRunnerEvents fails
// when this list and the runner's fire calls disagree.
var runnerEvents = []string{
	plugins.EventCommandExecuteBefore, plugins.EventSessionStart, plugins.EventSessionIdle,
	plugins.EventPlanTaskDone, plugins.EventPlanTodosDone, plugins.EventSessionEnd,
}

// toolEvents are fired by the tool door (host/tools) for each tool call a
// task makes, a runbook block's bash included.
var toolEvents = []string{plugins.EventToolExecuteBefore, plugins.EventToolExecuteAfter}

// IsRunEvent reports whether a start-work run fires the hook event ev
// without asking a model: the events the runner fires itself
// (runnerEvents) and the tool events of its tasks' tool calls. The model
// door's events (chat.message, session.compacting, session.compacted) are
// not among them: a run fires those only when a task asks a model.
func IsRunEvent(ev string) bool {
	return slices.Contains(runnerEvents, ev) || slices.Contains(toolEvents, ev)
}
