// Package loop holds the loop events of event schema v0: STATE, DONE and
// ABORT on the retained topic loop:current, and ANCHOR recovery snapshots on
// the append-only topic loop:anchor.
//
// Writers emit schema 0. Readers accept schema 0, 1 and 2 (the same fields:
// schema 1 is what idle wrote before v0 was formalised, schema 2 what it
// wrote with prompt_blob in place of prompt_file) and ignore unknown fields,
// as the schema's evolution rules require. Readers also take what idle
// writes beyond the document: DONE with reason STUCK or ABORT, ABORT with
// reason ERROR.
//
// Weave adds two optional fields (additive, so schema 0 still): a frame's
// prompt_blob, the content address "sha256:<hex>" of its prompt file (the id
// `jwz blob put` gives that content), and an ABORT's resumable, true when
// the loop only paused and can be resumed (a failed task, a continuation
// pause, Ctrl-C). A reader that ignores resumable sees the ABORT the
// document describes. Decode validates what it reads, so a reader gets either a
// well-formed event or an error that says which field is wrong.
package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weavehq/weave/bus"
)

// Schema is the version writers emit.
const Schema = 0

// Topics of loop events.
const (
	TopicCurrent = "loop:current" // retained: the latest STATE, DONE or ABORT
	TopicAnchor  = "loop:anchor"  // append-only: ANCHOR snapshots
	TopicTrace   = "loop:trace"   // append-only: planned, not yet used
)

// StateTTL is the age after which a STATE is stale.
const StateTTL = 2 * time.Hour

// Mode is a loop mode.
type Mode string

// The loop modes.
const (
	ModeLoop  Mode = "loop"
	ModeGrind Mode = "grind"
	ModeIssue Mode = "issue"
)

func (m Mode) valid() bool { return m == ModeLoop || m == ModeGrind || m == ModeIssue }

// Kind is the "event" field of events on loop:current.
type Kind string

// The event kinds on loop:current. ANCHOR events have no "event" field; they
// are told apart by their topic.
const (
	KindState Kind = "STATE"
	KindDone  Kind = "DONE"
	KindAbort Kind = "ABORT"
)

// Reasons a loop ends.
const (
	ReasonComplete      = "COMPLETE"
	ReasonMaxIterations = "MAX_ITERATIONS"
	ReasonNoMoreIssues  = "NO_MORE_ISSUES"
	ReasonMaxIssues     = "MAX_ISSUES"
	ReasonUserCancelled = "USER_CANCELLED" // ABORT only; omitted for internal errors

	// Reasons idle writes that the document does not list; readers
	// accept them, Weave does not write them.
	ReasonStuck = "STUCK" // DONE: the agent said it is stuck
	ReasonAbort = "ABORT" // DONE: idle clearing the state after an ABORT
	ReasonError = "ERROR" // ABORT: an internal error, named
)

// Frame is one level of the execution stack; the last frame is the current
// loop. Filter is for grind frames; the issue fields for issue frames.
type Frame struct {
	ID         string `json:"id"`
	Mode       Mode   `json:"mode"`
	Iter       int    `json:"iter"`
	Max        int    `json:"max"`
	PromptFile string `json:"prompt_file"`
	// PromptBlob is idle's field: the prompt's content address,
	// "sha256:<hex>". Readers accept a frame with either field.
	PromptBlob string `json:"prompt_blob,omitempty"`

	Filter string `json:"filter,omitempty"`

	IssueID      string `json:"issue_id,omitempty"`
	WorktreePath string `json:"worktree_path,omitempty"`
	Branch       string `json:"branch,omitempty"`
	BaseRef      string `json:"base_ref,omitempty"`
}

// Validate checks the fields common to all modes and those of the frame's
// mode: issue frames need issue_id, an absolute worktree_path, branch and
// base_ref; a grind frame's filter may be empty (no filter).
func (f Frame) Validate() error {
	var errs []error
	if f.ID == "" {
		errs = append(errs, errors.New("id is empty"))
	}
	if !f.Mode.valid() {
		errs = append(errs, fmt.Errorf("mode %q is not loop, grind or issue", f.Mode))
	}
	if f.Max < 1 {
		errs = append(errs, fmt.Errorf("max %d is below 1", f.Max))
	}
	if f.Iter < 1 || f.Iter > f.Max {
		errs = append(errs, fmt.Errorf("iter %d is outside 1..max (%d)", f.Iter, f.Max))
	}
	switch {
	case f.PromptFile == "" && f.PromptBlob != "":
	case !filepath.IsAbs(f.PromptFile):
		errs = append(errs, fmt.Errorf("prompt_file %q is not an absolute path", f.PromptFile))
	}
	if f.Mode == ModeIssue {
		if f.IssueID == "" {
			errs = append(errs, errors.New("issue frame has no issue_id"))
		}
		if !filepath.IsAbs(f.WorktreePath) {
			errs = append(errs, fmt.Errorf("issue frame worktree_path %q is not an absolute path", f.WorktreePath))
		}
		if f.Branch == "" {
			errs = append(errs, errors.New("issue frame has no branch"))
		}
		if f.BaseRef == "" {
			errs = append(errs, errors.New("issue frame has no base_ref"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stack frame %q: %w", f.ID, err)
	}
	return nil
}

// Event is a STATE, DONE or ABORT event on loop:current.
type Event struct {
	Schema    int       `json:"schema"`
	Kind      Kind      `json:"event"`
	RunID     string    `json:"run_id,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	Reason    string    `json:"reason,omitempty"`
	// Resumable marks an ABORT that is a pause: the loop stopped (a task
	// failed, a continuation pause, Ctrl-C) and can be resumed where it
	// stopped. Absent on a loop that is over.
	Resumable bool    `json:"resumable,omitempty"`
	Stack     []Frame `json:"stack"`
}

// NewState returns a STATE event for run runID at time at.
func NewState(runID string, at time.Time, stack ...Frame) Event {
	return Event{Schema: Schema, Kind: KindState, RunID: runID, UpdatedAt: at.UTC(), Stack: stack}
}

// NewDone returns a DONE event; reason is one of the Reason constants but
// ReasonUserCancelled.
func NewDone(reason string) Event {
	return Event{Schema: Schema, Kind: KindDone, Reason: reason, Stack: []Frame{}}
}

// NewAbort returns an ABORT event; reason is ReasonUserCancelled or empty
// for an internal error.
func NewAbort(reason string) Event {
	return Event{Schema: Schema, Kind: KindAbort, Reason: reason, Stack: []Frame{}}
}

// NewPause returns the ABORT of a loop that paused and can be resumed:
// resumable is set; reason is ReasonUserCancelled when a person stopped
// it, empty when it stopped on its own (a failure, a continuation pause).
func NewPause(reason string) Event {
	e := NewAbort(reason)
	e.Resumable = true
	return e
}

// Validate checks the required fields of the event's kind.
func (e Event) Validate() error {
	if e.Schema < 0 || e.Schema > 2 {
		return fmt.Errorf("loop event schema %d is not supported (want 0, 1 or 2)", e.Schema)
	}
	if e.Resumable && e.Kind != KindAbort {
		return fmt.Errorf("%s event is resumable; only an ABORT can be", e.Kind)
	}
	switch e.Kind {
	case KindState:
		if _, _, _, err := ParseRunID(e.RunID); err != nil {
			return fmt.Errorf("STATE event: %w", err)
		}
		if e.UpdatedAt.IsZero() {
			return errors.New("STATE event has no updated_at")
		}
		if len(e.Stack) == 0 {
			return errors.New("STATE event has an empty stack; send DONE or ABORT when no loop runs")
		}
		for _, f := range e.Stack {
			if err := f.Validate(); err != nil {
				return fmt.Errorf("STATE event: %w", err)
			}
		}
	case KindDone:
		switch e.Reason {
		case ReasonComplete, ReasonMaxIterations, ReasonNoMoreIssues, ReasonMaxIssues, ReasonStuck, ReasonAbort:
		default:
			return fmt.Errorf("DONE event reason %q is not one of %s, %s, %s, %s, %s, %s", e.Reason, ReasonComplete, ReasonMaxIterations, ReasonNoMoreIssues, ReasonMaxIssues, ReasonStuck, ReasonAbort)
		}
		if len(e.Stack) != 0 {
			return fmt.Errorf("DONE event stack has %d frames, want none", len(e.Stack))
		}
	case KindAbort:
		if e.Reason != "" && e.Reason != ReasonUserCancelled && e.Reason != ReasonError {
			return fmt.Errorf("ABORT event reason %q is not %s or %s (or omitted for internal errors)", e.Reason, ReasonUserCancelled, ReasonError)
		}
		if len(e.Stack) != 0 {
			return fmt.Errorf("ABORT event stack has %d frames, want none", len(e.Stack))
		}
	default:
		return fmt.Errorf("loop event kind %q is not STATE, DONE or ABORT", e.Kind)
	}
	return nil
}

// Top returns the current (last) frame of the stack.
func (e Event) Top() (Frame, bool) {
	if len(e.Stack) == 0 {
		return Frame{}, false
	}
	return e.Stack[len(e.Stack)-1], true
}

// Stale reports whether e is a STATE older than StateTTL at now: the loop
// that wrote it is presumed dead. DONE and ABORT are never stale.
func Stale(e Event, now time.Time) bool {
	return e.Kind == KindState && now.Sub(e.UpdatedAt) > StateTTL
}

// Encode validates e and returns it as JSON with schema 0.
func Encode(e Event) ([]byte, error) {
	e.Schema = Schema
	if e.Stack == nil {
		e.Stack = []Frame{}
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(e)
}

// Decode reads a STATE, DONE or ABORT event of schema 0 or 1, ignoring
// unknown fields, and validates it.
func Decode(data []byte) (Event, error) {
	var raw struct {
		Schema *int     `json:"schema"`
		Stack  *[]Frame `json:"stack"`
		Event
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Event{}, fmt.Errorf("decode loop event: %w", err)
	}
	if raw.Schema == nil {
		return Event{}, errors.New("decode loop event: no schema field")
	}
	if raw.Stack == nil {
		return Event{}, errors.New("decode loop event: no stack field")
	}
	e := raw.Event
	e.Schema = *raw.Schema
	e.Stack = *raw.Stack
	if err := e.Validate(); err != nil {
		return Event{}, fmt.Errorf("decode loop event: %w", err)
	}
	return e, nil
}

// Anchor is a recovery snapshot on loop:anchor.
type Anchor struct {
	Schema        int       `json:"schema"`
	Goal          string    `json:"goal"`
	Mode          Mode      `json:"mode"`
	Iteration     string    `json:"iteration"` // "current/max"
	Progress      string    `json:"progress"`
	ModifiedFiles string    `json:"modified_files"` // comma-separated
	NextStep      string    `json:"next_step"`
	Timestamp     time.Time `json:"timestamp"`
}

// Validate checks the anchor's required fields and its iteration format.
func (a Anchor) Validate() error {
	if a.Schema != 0 && a.Schema != 1 {
		return fmt.Errorf("ANCHOR schema %d is not supported (want 0 or 1)", a.Schema)
	}
	var errs []error
	if a.Goal == "" {
		errs = append(errs, errors.New("goal is empty"))
	}
	if !a.Mode.valid() {
		errs = append(errs, fmt.Errorf("mode %q is not loop, grind or issue", a.Mode))
	}
	if _, _, err := ParseIteration(a.Iteration); err != nil {
		errs = append(errs, err)
	}
	if a.NextStep == "" {
		errs = append(errs, errors.New("next_step is empty"))
	}
	if a.Timestamp.IsZero() {
		errs = append(errs, errors.New("timestamp is missing"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ANCHOR: %w", err)
	}
	return nil
}

// Files splits ModifiedFiles into its file names.
func (a Anchor) Files() []string {
	var out []string
	for _, f := range strings.Split(a.ModifiedFiles, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Iteration formats an ANCHOR iteration.
func Iteration(cur, max int) string { return strconv.Itoa(cur) + "/" + strconv.Itoa(max) }

// ParseIteration parses "current/max": two integers, max at least 1,
// current between 0 and max.
func ParseIteration(s string) (cur, max int, err error) {
	c, m, ok := strings.Cut(s, "/")
	if ok {
		cur, err = strconv.Atoi(c)
		if err == nil {
			max, err = strconv.Atoi(m)
		}
	}
	if !ok || err != nil || max < 1 || cur < 0 || cur > max {
		return 0, 0, fmt.Errorf("iteration %q is not \"current/max\" with 0 <= current <= max, max >= 1 (e.g. \"3/10\")", s)
	}
	return cur, max, nil
}

// EncodeAnchor validates a and returns it as JSON with schema 0.
func EncodeAnchor(a Anchor) ([]byte, error) {
	a.Schema = Schema
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

// DecodeAnchor reads an ANCHOR of schema 0 or 1, ignoring unknown fields,
// and validates it.
func DecodeAnchor(data []byte) (Anchor, error) {
	var raw struct {
		Schema *int `json:"schema"`
		Anchor
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Anchor{}, fmt.Errorf("decode ANCHOR: %w", err)
	}
	if raw.Schema == nil {
		return Anchor{}, errors.New("decode ANCHOR: no schema field")
	}
	// progress and modified_files may be empty but must be there.
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(data, &fields) // it parsed above
	for _, k := range []string{"progress", "modified_files"} {
		if _, ok := fields[k]; !ok {
			return Anchor{}, fmt.Errorf("decode ANCHOR: no %s field", k)
		}
	}
	a := raw.Anchor
	a.Schema = *raw.Schema
	if err := a.Validate(); err != nil {
		return Anchor{}, fmt.Errorf("decode %w", err)
	}
	return a, nil
}

// RunID returns the run id "<mode>-<unix seconds>-<pid>".
func RunID(mode Mode, start time.Time, pid int) string {
	return string(mode) + "-" + strconv.FormatInt(start.Unix(), 10) + "-" + strconv.Itoa(pid)
}

// ParseRunID splits a run id into its mode, start time and pid.
func ParseRunID(id string) (Mode, time.Time, int, error) {
	bad := func() (Mode, time.Time, int, error) {
		return "", time.Time{}, 0, fmt.Errorf("run id %q is not <mode>-<unix seconds>-<pid> (e.g. loop-1703123456-12345)", id)
	}
	parts := strings.Split(id, "-")
	if len(parts) != 3 {
		return bad()
	}
	mode := Mode(parts[0])
	sec, err1 := strconv.ParseInt(parts[1], 10, 64)
	pid, err2 := strconv.Atoi(parts[2])
	if !mode.valid() || err1 != nil || err2 != nil || sec < 0 || pid < 0 {
		return bad()
	}
	return mode, time.Unix(sec, 0).UTC(), pid, nil
}

// Publisher is the part of bus.Bus that publishing needs.
type Publisher interface {
	Publish(ctx context.Context, m bus.Message) (bus.Result, error)
}

// Publish validates e and publishes it on loop:current.
func Publish(ctx context.Context, p Publisher, e Event) (bus.Result, error) {
	data, err := Encode(e)
	if err != nil {
		return bus.Result{}, err
	}
	return p.Publish(ctx, bus.Message{Topic: TopicCurrent, Payload: data})
}

// PublishAnchor validates a and publishes it on loop:anchor.
func PublishAnchor(ctx context.Context, p Publisher, a Anchor) (bus.Result, error) {
	data, err := EncodeAnchor(a)
	if err != nil {
		return bus.Result{}, err
	}
	return p.Publish(ctx, bus.Message{Topic: TopicAnchor, Payload: data})
}

// Retainer is the part of bus.Bus that reading the current state needs.
type Retainer interface {
	Retained(ctx context.Context, topic string) (bus.Message, bool, error)
}

// Current reads the last event on loop:current. ok is false when none was
// published.
func Current(ctx context.Context, r Retainer) (e Event, ok bool, err error) {
	m, ok, err := r.Retained(ctx, TopicCurrent)
	if err != nil || !ok {
		return Event{}, false, err
	}
	e, err = Decode(bytes.TrimSpace(m.Payload))
	if err != nil {
		return Event{}, false, err
	}
	return e, true, nil
}
