package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/host/run"
)

// runView shows a start-work run: a live view on a terminal, plain lines
// otherwise, or JSON events with --json.
type runView interface {
	Observe(run.Event)
	// Close finishes drawing; nothing is drawn after it returns.
	Close()
}

func newRunView(s *Streams, asJSON bool, tail int) runView {
	switch {
	case asJSON:
		return &jsonView{enc: json.NewEncoder(s.Out)}
	case s.Terminal:
		return newLiveView(s, tail)
	default:
		return &plainView{out: s.Out, errOut: s.ErrOut}
	}
}

// jsonView prints one JSON event per line.
type jsonView struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (v *jsonView) Observe(ev run.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ev.Time = ev.Time.UTC()
	_ = v.enc.Encode(ev)
}

func (v *jsonView) Close() {}

// plainView prints one line per event, for logs and pipes.
type plainView struct {
	out, errOut io.Writer
}

func (v *plainView) Observe(ev run.Event) {
	switch ev.Type {
	case run.EventPlanStarted:
		verb := "starting"
		if ev.Resumed {
			verb = "resuming"
		}
		fmt.Fprintf(v.out, "%s plan %s (%d/%d done)\n", verb, ev.Plan, ev.Completed, ev.Total)
	case run.EventTaskStarted:
		fmt.Fprintf(v.out, "[%d/%d] task %d%s: %s%s%s\n", ev.Completed, ev.Total, ev.Task, gateNote(ev), ev.Title, attemptNote(ev.Attempt), workerNote(ev))
	case run.EventTaskOutput:
		if ev.Worker > 0 {
			// Workers' lines interleave: each says whose it is.
			fmt.Fprintf(v.out, "    [w%d] %s\n", ev.Worker, ev.Output)
			break
		}
		fmt.Fprintf(v.out, "    %s\n", ev.Output)
	case run.EventTaskCommitted:
		fmt.Fprintf(v.out, "[%d/%d] task %d committed on %s%s; waiting to land\n", ev.Completed, ev.Total, ev.Task, ev.Branch, workerNote(ev))
	case run.EventTaskLanding:
		fmt.Fprintf(v.out, "[%d/%d] task %d landing\n", ev.Completed, ev.Total, ev.Task)
	case run.EventTaskConflict:
		again := ""
		if ev.Retry {
			again = "; running it again on the new head"
		}
		fmt.Fprintf(v.out, "[%d/%d] task %d did not land: %s%s\n", ev.Completed, ev.Total, ev.Task, ev.Error, again)
	case run.EventTaskDone:
		fmt.Fprintf(v.out, "[%d/%d] task %d done (%s%s)\n", ev.Completed, ev.Total, ev.Task, millis(ev.ElapsedMS), costNote(ev))
	case run.EventTaskFailed:
		retry := ""
		if ev.Retry {
			retry = "; retrying"
		}
		fmt.Fprintf(v.out, "[%d/%d] task %d failed: %s%s\n", ev.Completed, ev.Total, ev.Task, ev.Error, retry)
	case run.EventPlanPaused:
		if ev.Task != 0 {
			// A task failed: its line above said why, and the run's last
			// line says it again with what to do.
			fmt.Fprintf(v.out, "plan %s paused at %d/%d\n", ev.Plan, ev.Completed, ev.Total)
			break
		}
		fmt.Fprintf(v.out, "plan %s paused at %d/%d: %s\n", ev.Plan, ev.Completed, ev.Total, ev.Reason)
	case run.EventPlanDone:
		fmt.Fprintf(v.out, "plan %s done: %d/%d tasks\n", ev.Plan, ev.Completed, ev.Total)
	case run.EventWarning:
		fmt.Fprintf(v.errOut, "warning: %s\n", ev.Reason)
	case chat.ModelFallback:
		fmt.Fprintf(v.errOut, "[%s] %s\n", ev.Agent, ev.Reason)
	case run.EventModelToolCall:
		fmt.Fprintf(v.out, "    [%s] → %s\n", ev.Agent, ev.Tool)
	case run.EventModelCompacting, run.EventModelCompacted:
		fmt.Fprintf(v.out, "    [%s] %s\n", ev.Agent, ev.Output)
	case run.EventWorkAwarded:
		fmt.Fprintf(v.out, "    task %d awarded to worker %s%s\n", ev.Task, ev.WorkerName, labelsNote(ev.WorkerLabels))
	case run.EventWorkLost:
		fmt.Fprintf(v.out, "    task %d: worker %s lost it (%s); offering it again\n", ev.Task, ev.WorkerName, ev.Reason)
	case run.EventReviewStarted:
		fmt.Fprintf(v.out, "reviewing plan %s with %s\n", ev.Plan, ev.Reason)
	case run.EventReview:
		printReviews(v.out, []agents.Review{reviewOf(ev)})
	}
}

// reviewOf is the review a review event carries.
func reviewOf(ev run.Event) agents.Review {
	return agents.Review{Reviewer: ev.Agent, Verdict: agents.Verdict(ev.Verdict), Reasons: ev.Reason, Error: ev.Error}
}

func (v *plainView) Close() {}

// gateNote marks an item of the plan's Verification checklist.
func gateNote(ev run.Event) string {
	if ev.Verification {
		return " (verification)"
	}
	return ""
}

// labelsNote is a remote worker's labels, " [gpu,os=linux]", or "".
func labelsNote(labels []string) string {
	if len(labels) == 0 {
		return ""
	}
	return " [" + strings.Join(labels, ",") + "]"
}

// workerNote names the worker of a task in a run with workers.
func workerNote(ev run.Event) string {
	if ev.Worker > 0 {
		return fmt.Sprintf(" (worker %d)", ev.Worker)
	}
	return ""
}

func attemptNote(n int) string {
	if n > 1 {
		return fmt.Sprintf(" (attempt %d)", n)
	}
	return ""
}

func millis(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// liveView redraws a small panel in place: the plan and its progress bar,
// the current task with its elapsed time, and the tail of its output.
// Finished tasks scroll above the panel as plain lines.
type liveView struct {
	prog *tea.Program
	out  io.Writer
	done chan struct{}

	mu sync.Mutex
	// m mirrors the program's model, so that the lines to print are sent
	// in the same queue as the events and the quit, never after them.
	m liveModel
}

func newLiveView(s *Streams, tail int) *liveView {
	m := liveModel{tail: tail, width: s.Width, now: time.Now, pal: s.palette()}
	// No input and no signal handler: Ctrl-C stays with weave, which pauses
	// the plan, and the terminal is never put in raw mode.
	p := tea.NewProgram(m, tea.WithOutput(s.Out), tea.WithInput(nil), tea.WithoutSignalHandler())
	v := &liveView{prog: p, out: s.Out, done: make(chan struct{}), m: m}
	go func() {
		defer close(v.done)
		final, err := p.Run()
		// The panel is gone; its last state is printed once, as a plain
		// frame from the start of a cleared line, so that a ^C the terminal
		// echoed into it cannot garble it.
		if fm, ok := final.(liveModel); ok && err == nil {
			fm.quitting = false
			if frame := fm.View(); frame != "" {
				fmt.Fprint(v.out, "\r\x1b[K"+frame)
			}
		}
	}()
	return v
}

func (v *liveView) Observe(ev run.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var printed string
	v.m, printed = v.m.applyEvent(ev)
	if printed != "" {
		// Send, unlike Println, does not block once the program has ended.
		v.prog.Send(tea.Println(printed)())
	}
	v.prog.Send(eventMsg(ev))
}

func (v *liveView) Close() {
	v.prog.Send(quitMsg{})
	<-v.done
}

type (
	eventMsg run.Event
	tickMsg  time.Time
	quitMsg  struct{}
)

// liveModel is the state the live view draws. Its View is a pure function of
// it, which keeps the drawing testable.
type liveModel struct {
	plan             string
	completed, total int
	task             string
	taskStart        time.Time
	lines            []string
	// streaming is set while model text is arriving into the last line.
	streaming bool
	tail      int
	width     int
	status    string
	now       func() time.Time
	pal       palette
	// quitting erases the panel; the last frame is printed after it.
	quitting bool
	// lanes are the workers of a run with workers (viewlanes.go).
	lanes lanes
	// spent is what the run's model calls cost so far, once one was
	// priced (model.usage).
	spent  chat.Cost
	priced bool
}

func (m liveModel) Init() tea.Cmd { return tick() }

func tick() tea.Cmd {
	return tea.Tick(200*time.Millisecond, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m liveModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tickMsg:
		if m.quitting {
			return m, nil
		}
		return m, tick()
	case quitMsg:
		m.quitting = true
		return m, tea.Quit
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case eventMsg:
		// The lines to print were printed by Observe, in order.
		nm, _ := m.applyEvent(run.Event(msg))
		return nm, nil
	}
	return m, nil
}

// apply folds an event into the model, returning lines to print above the
// panel for events that deserve a permanent record.
func (m liveModel) apply(ev run.Event) (tea.Model, tea.Cmd) {
	nm, printed := m.applyEvent(ev)
	if printed != "" {
		return nm, tea.Println(printed)
	}
	return nm, nil
}

// applyEvent folds an event into the model and returns what to print above
// the panel, if anything.
func (m liveModel) applyEvent(ev run.Event) (liveModel, string) {
	if ev.Plan != "" {
		m.plan = ev.Plan
	}
	if ev.Worker > 0 {
		return m.applyWorkerEvent(ev)
	}
	if strings.HasPrefix(ev.Type, "work.") {
		return m.applyWorkEvent(ev)
	}
	m = m.applyRunEvent(ev)
	switch ev.Type {
	case run.EventWarning, run.EventTaskOutput, run.EventModelDelta, run.EventModelToolCall, run.EventModelCompacting, run.EventModelCompacted, chat.ModelFallback, run.EventModelUsage:
		// These carry no progress.
	default:
		m.completed, m.total = ev.Completed, ev.Total
	}
	var printed string
	switch ev.Type {
	case run.EventPlanStarted:
		if ev.Resumed {
			printed = fmt.Sprintf("resuming %s at %d/%d", ev.Plan, ev.Completed, ev.Total)
		}
	case run.EventTaskStarted:
		m.task = fmt.Sprintf("%d%s. %s%s", ev.Task, gateNote(ev), ev.Title, attemptNote(ev.Attempt))
		m.taskStart = ev.Time
		m.lines = nil
	case run.EventTaskOutput:
		m.lines = append(m.lines, printable(ev.Output))
	case run.EventModelDelta:
		// The model's text streams into the tail: pieces extend the last
		// line until a newline starts the next.
		parts := strings.Split(ev.Output, "\n")
		if len(m.lines) == 0 || !m.streaming {
			m.lines = append(m.lines, "")
		}
		m.lines[len(m.lines)-1] += printable(parts[0])
		for _, p := range parts[1:] {
			m.lines = append(m.lines, printable(p))
		}
		m.streaming = true
	case run.EventModelToolCall:
		m.lines = append(m.lines, printable(fmt.Sprintf("[%s] → %s", ev.Agent, ev.Tool)))
	case run.EventModelUsage:
		m.spent.Add(eventCost(ev))
		m.priced = true
	case run.EventModelCompacting, run.EventModelCompacted:
		m.lines = append(m.lines, printable(fmt.Sprintf("[%s] %s", ev.Agent, ev.Output)))
	case chat.ModelFallback:
		m.lines = append(m.lines, printable(fmt.Sprintf("[%s] %s", ev.Agent, ev.Reason)))
	case run.EventTaskDone:
		printed = fmt.Sprintf("%s %d. %s  %s", m.pal.ok.Render("✓"), ev.Task, ev.Title, m.pal.dim.Render(millis(ev.ElapsedMS)+costNote(ev)))
		m.task = ""
	case run.EventTaskFailed:
		// The output that led to the failure stays on screen above the panel.
		var b strings.Builder
		for _, l := range m.lines {
			fmt.Fprintf(&b, "  │ %s\n", clip(l, m.width-4))
		}
		fmt.Fprintf(&b, "%s %d. %s: %s", m.pal.bad.Render("✗"), ev.Task, ev.Title, ev.Error)
		if ev.Retry {
			b.WriteString(" (retrying)")
		}
		printed = b.String()
		m.lines = nil
	case run.EventPlanPaused:
		m.task = ""
		m.status = "paused: " + ev.Reason
	case run.EventPlanDone:
		m.task = ""
		m.status = "done"
	case run.EventWarning:
		printed = m.pal.warn.Render("warning:") + " " + ev.Reason
	case run.EventReviewStarted:
		m.status = "reviewing with " + ev.Reason
	case run.EventReview:
		var b strings.Builder
		printReviews(&b, []agents.Review{reviewOf(ev)})
		printed = strings.TrimRight(b.String(), "\n")
		m.status = "done"
	}
	if ev.Type != run.EventModelDelta {
		m.streaming = false
	}
	if m.tail > 0 && len(m.lines) > m.tail {
		m.lines = m.lines[len(m.lines)-m.tail:]
	}
	return m, printed
}

func (m liveModel) View() string {
	if m.quitting {
		// Not empty: the renderer flushes the lines queued for printing
		// only with a frame that differs from the last one.
		return " "
	}
	if m.plan == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s %d/%d", m.plan, bar(m.completed, m.total), m.completed, m.total)
	if m.priced {
		fmt.Fprintf(&b, "  %s", m.spent)
	}
	if m.status != "" {
		fmt.Fprintf(&b, "  %s", m.pal.state(m.status))
	}
	b.WriteByte('\n')
	if m.lanes.active() {
		m.viewLanes(&b)
	}
	if m.task != "" {
		elapsed := m.now().Sub(m.taskStart).Truncate(100 * time.Millisecond)
		fmt.Fprintf(&b, "▸ %s  %s\n", clip(m.task, m.width-12), elapsed)
		for _, l := range m.lines {
			fmt.Fprintf(&b, "  │ %s\n", clip(l, m.width-4))
		}
	}
	return b.String()
}

// barWidth is the width of every progress bar weave draws.
const barWidth = 20

func bar(done, total int) string {
	if total <= 0 {
		return strings.Repeat("░", barWidth)
	}
	n := min(max(done*barWidth/total, 0), barWidth)
	return strings.Repeat("█", n) + strings.Repeat("░", barWidth-n)
}

// ansiSeq matches terminal escape sequences (colours, cursor moves).
var ansiSeq = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// printable keeps what a line of task output shows as text: escape sequences
// and control characters would move the cursor and tear the panel. A
// carriage return keeps what was drawn last, as a terminal would show it.
func printable(line string) string {
	line = ansiSeq.ReplaceAllString(line, "")
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		line = line[i+1:]
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case r < 0x20 || r == 0x7f:
			return -1
		}
		return r
	}, line)
}

// eventCost is the cost an event carries; unknown when it has none.
func eventCost(ev run.Event) chat.Cost {
	if ev.CostUSD == nil {
		return chat.Cost{Unknown: true}
	}
	return chat.Cost{USD: *ev.CostUSD}
}

// costNote shows a finished task's cost after its time: ", $0.0123", or
// ", cost ?" when a price was unknown.
func costNote(ev run.Event) string {
	if ev.CostUSD == nil {
		return ""
	}
	return ", " + eventCost(ev).String()
}
