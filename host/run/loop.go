package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/jwz"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/plans"
)

// Payload types of loop events. The loop schema has no type field, but the
// JSON-RPC face requires one and readers of loop events ignore unknown
// fields, so the host adds it.
const (
	LoopEventType  = "loop.event"
	LoopAnchorType = "loop.anchor"
)

// loopPublishTimeout bounds one loop event's publish, so a slow bus cannot
// hold a run (the observer runs inside it).
const loopPublishTimeout = 5 * time.Second

// LoopObserver returns an Observer that passes every event to next (which
// may be nil) and publishes the run's loop events on b (event-schema v0):
//
//   - STATE on loop:current (retained) on plan.started, task.started and
//     task.done: run id loop-<unix>-<pid> from the start of the run, one
//     frame of mode "loop", iter = tasks completed + 1 (at most the total),
//     max = the plan's task count, prompt_file = the plan file,
//     prompt_blob = its content address (sha256:<hex>);
//   - DONE with reason COMPLETE on plan.done;
//   - ABORT with resumable true on plan.paused (the plan can be resumed
//     where it stopped): reason USER_CANCELLED when the user interrupted
//     the run, none when a task failed or the run paused on its own;
//   - ANCHOR on loop:anchor on plan.paused and plan.done: goal (plan and
//     task), iteration done/total, progress (the last three commits, when
//     project is a git repository), modified_files (git status), next_step.
//
// A run with workers (plan.started with Workers above 1, or any event from
// a worker) is a grind instead (see loopgrind.go): run id grind-<unix>-<pid>,
// its STATE a grind frame followed by one issue frame per running task.
//
// Every event is validated with package loop before it is published.
// Publishing errors go to logger (nil discards) and never stop the run.
// b may be nil when the events go only where opts send them.
func LoopObserver(ctx context.Context, b bus.Bus, project string, logger *slog.Logger, next Observer, opts ...LoopOption) Observer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lo := &loopObserver{ctx: context.WithoutCancel(ctx), b: b, project: project, log: logger, pid: os.Getpid()}
	for _, o := range opts {
		o(lo)
	}
	return func(ev Event) {
		if next != nil {
			next(ev)
		}
		lo.observe(ev)
	}
}

// A LoopOption adds a destination to LoopObserver.
type LoopOption func(*loopObserver)

// LoopToJWZ has the loop events also appended to the project's jwz store
// by w, as `jwz post` would: STATE, DONE and ABORT on loop:current, ANCHOR
// on loop:anchor, each body the event's JSON (without the bus's type).
func LoopToJWZ(w *jwz.Writer) LoopOption {
	return func(lo *loopObserver) { lo.jwz = w }
}

type loopObserver struct {
	ctx     context.Context
	b       bus.Bus
	jwz     *jwz.Writer
	project string
	log     *slog.Logger
	pid     int

	mu       sync.Mutex
	runID    string
	planPath string
	lastTask string // "task N: title" of the last task that started
	// grind marks a run with workers; issues are its running tasks, by
	// task number (a worker may take its next task while the last lands).
	grind  bool
	start  time.Time
	issues map[int]Event
	// blob caches the plan file's content address (blobFor).
	blob planBlob
	// buf holds the plan file while it is hashed, kept between reads: a
	// run ticks its plan every task, and a plan of a thousand tasks read
	// into a new buffer each time is most of what a lone run allocates.
	buf []byte
}

// planBlob is the content address of the plan file as it was when the file
// looked as key says.
type planBlob struct {
	key fileStamp
	id  string
}

// fileStamp is what a stat says of a file's version.
type fileStamp struct {
	size, mtime int64
	sys         any
}

func (lo *loopObserver) observe(ev Event) {
	lo.mu.Lock()
	defer lo.mu.Unlock()
	if ev.Worker > 0 && !lo.grind && ev.Type != EventPlanStarted {
		lo.toGrind(ev)
	}
	switch ev.Type {
	case EventPlanStarted:
		lo.begin(ev, ev.Workers > 1)
		lo.state(ev)
	case EventTaskStarted:
		lo.lastTask = taskGoal(ev)
		lo.issueStarted(ev)
		lo.state(ev)
	case EventTaskDone:
		// The run ticked the plan: a stat taken within the clock's
		// granularity of the last could not tell.
		lo.blob = planBlob{}
		lo.issueEnded(ev)
		lo.state(ev)
	case EventTaskFailed, EventTaskConflict:
		// A task of a grind stops running (it may start again on the new
		// head); a lone run's STATE stays as it was.
		if lo.grind {
			lo.issueEnded(ev)
			lo.state(ev)
		}
	case EventPlanDone:
		lo.publish(loop.NewDone(loop.ReasonComplete))
		lo.anchor(ev, "Plan "+ev.Plan+" is complete; nothing left to run")
	case EventPlanPaused:
		reason := ""
		if ev.Reason == "interrupted" {
			reason = loop.ReasonUserCancelled
		}
		lo.publish(loop.NewPause(reason))
		lo.anchor(ev, fmt.Sprintf("Run `weave start-work %s` to resume at task %d", ev.Plan, min(ev.Completed+1, max(ev.Total, 1))))
	}
}

// begin starts the run id at ev, the run's first event.
func (lo *loopObserver) begin(ev Event, grind bool) {
	mode := loop.ModeLoop
	if grind {
		mode = loop.ModeGrind
	}
	lo.grind, lo.start, lo.issues = grind, ev.Time, nil
	lo.runID = loop.RunID(mode, ev.Time, lo.pid)
	lo.planPath = planFile(lo.project, ev.Plan)
}

func (lo *loopObserver) state(ev Event) {
	if lo.runID == "" {
		// A run observed from its middle: start the run id here.
		lo.begin(ev, ev.Worker > 0)
	}
	iter := min(ev.Completed+1, ev.Total)
	if lo.grind {
		f := loop.Frame{ID: lo.runID, Mode: loop.ModeGrind, Iter: iter, Max: ev.Total, PromptFile: lo.planPath, PromptBlob: lo.blobFor()}
		lo.publish(loop.NewState(lo.runID, ev.Time, append([]loop.Frame{f}, lo.issueFrames()...)...))
		return
	}
	f := loop.Frame{ID: lo.runID, Mode: loop.ModeLoop, Iter: iter, Max: ev.Total, PromptFile: lo.planPath, PromptBlob: lo.blobFor()}
	lo.publish(loop.NewState(lo.runID, ev.Time, f))
}

func (lo *loopObserver) publish(e loop.Event) {
	data, err := loop.Encode(e)
	if err != nil {
		lo.log.Warn("loop event not published: invalid", "event", e.Kind, "err", err)
		return
	}
	lo.send(loop.TopicCurrent, data, LoopEventType)
}

func (lo *loopObserver) anchor(ev Event, nextStep string) {
	goal := "Plan " + ev.Plan
	switch {
	case ev.Task > 0:
		goal += ", " + taskGoal(ev)
	case lo.lastTask != "":
		goal += ", " + lo.lastTask
	}
	a := NewAnchor(lo.project, goal, ev.Completed, ev.Total, nextStep, ev.Time)
	if lo.grind {
		a.Mode = loop.ModeGrind
	}
	if lo.b != nil {
		if err := PublishAnchor(lo.ctx, lo.b, a); err != nil {
			lo.log.Warn("loop anchor not published", "err", err)
		}
	}
	if lo.jwz != nil {
		data, err := loop.EncodeAnchor(a)
		if err != nil {
			lo.log.Warn("loop anchor not published: invalid", "err", err)
			return
		}
		lo.post(loop.TopicAnchor, data)
	}
}

// post appends a loop event to the jwz store; a failure is logged.
func (lo *loopObserver) post(topic string, data []byte) {
	ctx, cancel := context.WithTimeout(lo.ctx, loopPublishTimeout)
	defer cancel()
	if _, err := lo.jwz.Post(ctx, topic, data); err != nil {
		lo.log.Warn("loop event not written to jwz", "topic", topic, "err", err)
	}
}

// blobFor is the plan file's content address, read and hashed again only
// when the file changed: a run's events ask for it two or more times a
// task, and a plan of a thousand tasks is tens of kilobytes.
func (lo *loopObserver) blobFor() string {
	fi, err := os.Stat(lo.planPath)
	if err != nil {
		return ""
	}
	key := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), sys: stampOf(fi)}
	if lo.blob.id != "" && lo.blob.key == key {
		return lo.blob.id
	}
	var id string
	id, lo.buf = blobID(lo.planPath, lo.buf)
	lo.blob = planBlob{key: key, id: id}
	return id
}

// blobID is the content address of the file at path, "sha256:<hex>" (the
// id `jwz blob put` gives the same bytes), or "" when it cannot be read.
// The file is read into buf, grown as needed and returned for the next
// read.
func blobID(path string, buf []byte) (string, []byte) {
	f, err := os.Open(path)
	if err != nil {
		return "", buf
	}
	defer f.Close()
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", buf
		}
	}
	sum := sha256.Sum256(buf)
	return "sha256:" + hex.EncodeToString(sum[:]), buf
}

// NewAnchor is the recovery snapshot of project at t: goal, iteration
// done/total (a total below 1 counts as 1), the last three commits and the
// files git reports modified (both empty outside a git repository), and the
// step to resume with.
func NewAnchor(project, goal string, done, total int, nextStep string, t time.Time) loop.Anchor {
	total = max(total, 1)
	return loop.Anchor{
		Goal:          goal,
		Mode:          loop.ModeLoop,
		Iteration:     loop.Iteration(min(max(done, 0), total), total),
		Progress:      gitOutput(project, "log", "--oneline", "-3"),
		ModifiedFiles: modifiedFiles(project),
		NextStep:      nextStep,
		Timestamp:     t.UTC(),
	}
}

// PublishAnchor validates a and publishes it on loop:anchor, typed
// loop.anchor as every loop event the host sends; a slow bus is given
// loopPublishTimeout.
func PublishAnchor(ctx context.Context, b bus.Bus, a loop.Anchor) error {
	data, err := loop.EncodeAnchor(a)
	if err != nil {
		return fmt.Errorf("loop anchor invalid: %w", err)
	}
	return publishTyped(ctx, b, loop.TopicAnchor, data, LoopAnchorType)
}

func publishTyped(ctx context.Context, b bus.Bus, topic string, data []byte, typ string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loopPublishTimeout)
	defer cancel()
	if _, err := b.Publish(ctx, bus.Message{Topic: topic, Payload: withType(data, typ)}); err != nil {
		return fmt.Errorf("publish on %s: %w", topic, err)
	}
	return nil
}

func (lo *loopObserver) send(topic string, data []byte, typ string) {
	if lo.jwz != nil {
		lo.post(topic, data)
	}
	if lo.b == nil {
		return
	}
	if err := publishTyped(lo.ctx, lo.b, topic, data, typ); err != nil {
		lo.log.Warn("loop event not published", "topic", topic, "err", err)
	}
}

// withType adds "type" to a JSON object.
func withType(obj []byte, typ string) []byte {
	t, _ := json.Marshal(typ)
	rest := bytes.TrimPrefix(bytes.TrimSpace(obj), []byte("{"))
	out := append([]byte(`{"type":`), t...)
	if len(bytes.TrimSpace(rest)) > 1 { // not "}"
		out = append(out, ',')
	}
	return append(out, rest...)
}

func taskGoal(ev Event) string {
	if ev.Title == "" {
		return fmt.Sprintf("task %d", ev.Task)
	}
	return fmt.Sprintf("task %d: %s", ev.Task, ev.Title)
}

// planFile finds the file of plan name in the project (plan files may end
// in .md in any case), absolute as the loop schema wants it.
func planFile(project, name string) string {
	dir := plans.PlansDir(project)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			n := e.Name()
			if strings.EqualFold(filepath.Ext(n), ".md") && strings.TrimSuffix(n, filepath.Ext(n)) == name {
				return filepath.Join(dir, n)
			}
		}
	}
	return filepath.Join(dir, name+".md")
}

// gitOutput runs git in dir and returns its output with lines joined by
// "; ", or "" when dir is not a repository or git fails.
func gitOutput(dir string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := proc.GitOutput(ctx, dir, args...)
	if err != nil {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// modifiedFiles lists the paths git status reports, comma-separated.
func modifiedFiles(dir string) string {
	out := gitOutput(dir, "status", "--porcelain")
	if out == "" {
		return ""
	}
	var files []string
	for _, l := range strings.Split(out, "; ") {
		if len(l) > 3 {
			f := strings.TrimSpace(l[2:])
			if _, to, ok := strings.Cut(f, " -> "); ok {
				f = to
			}
			files = append(files, f)
		}
	}
	return strings.Join(files, ",")
}

// LoopState reads the last loop event on loop:current. It returns nil when
// none was published; stale is true for a STATE older than loop.StateTTL
// (2h) at now: the loop that wrote it is presumed dead.
func LoopState(ctx context.Context, b bus.Bus, now time.Time) (*loop.Event, bool, error) {
	e, ok, err := loop.Current(ctx, b)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", loop.TopicCurrent, err)
	}
	if !ok {
		return nil, false, nil
	}
	return &e, loop.Stale(e, now), nil
}
