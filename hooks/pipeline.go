package hooks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/weavehq/weave/internal/textcap"
	"github.com/weavehq/weave/plugins"
)

// FailPolicy says what a failed hook (timeout, error, panic) means.
type FailPolicy string

// The failure policies. FailDefault resolves per event: closed for
// tool.execute.before, open for every other event.
const (
	FailDefault FailPolicy = ""
	FailClosed  FailPolicy = "closed"
	FailOpen    FailPolicy = "open"
)

// The sources a hook can come from, as shown by `weave hooks list`.
const (
	SourceBuiltin = "builtin"
	SourcePlugin  = "plugin"
	SourceCommand = "command"
	SourceBus     = "bus"
)

// DefaultTimeout bounds a hook call when neither the hook nor the options
// give a timeout.
const DefaultTimeout = 30 * time.Second

// Registered is a hook as the pipeline knows it: the hook, its description,
// and how it is run.
type Registered struct {
	Hook plugins.Hook
	// Info is the hook's description; Info.Name, Info.Events and
	// Info.Priority decide when and in which order it runs.
	Info plugins.Info
	// Timeout bounds one call; zero means Options.DefaultTimeout.
	Timeout time.Duration
	// Fail is the failure policy; FailDefault resolves per event.
	Fail FailPolicy
	// Source is builtin, plugin, command or bus.
	Source string
	// Detail describes the hook for listings (a command line, a binary path).
	Detail string
}

// Options configure a pipeline.
type Options struct {
	// DisabledHooks are hook names that never run (config disabled_hooks).
	DisabledHooks []string
	// Logger receives failures and notes; nil discards them.
	Logger *slog.Logger
	// DefaultTimeout applies to hooks without their own; zero means
	// DefaultTimeout.
	DefaultTimeout time.Duration
	// OnFailClosed, when set, hears of every failure of a hook whose
	// failure policy is closed, after the event was blocked for it: a run
	// stops on it rather than going on without a guard. It must not block.
	OnFailClosed func(ev plugins.Event, rep Report)
	// MaxReason and MaxContext bound a decision's reason and added
	// context, in bytes (hook.max_reason_bytes, hook.max_context_bytes);
	// zero means MaxReason and MaxContext.
	MaxReason, MaxContext int
}

// Report is what happened to one hook during a run. Every hook that handles
// the event gets a report, including skipped and failed ones.
type Report struct {
	Hook   string         `json:"hook"`
	Source string         `json:"source,omitempty"`
	Action plugins.Action `json:"action,omitempty"`
	Reason string         `json:"reason,omitempty"`
	// Duration is how long the hook took; JSON has it as duration_ms.
	Duration time.Duration `json:"-"`
	// Error is why the hook failed (timeout, error, panic); the failure
	// policy then decided Action.
	Error    string `json:"error,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Panicked bool   `json:"panicked,omitempty"`
	// Policy is the failure policy applied, set only when the hook failed.
	Policy FailPolicy `json:"policy,omitempty"`
	// Skipped is set for hooks after a block: they were not called.
	Skipped bool `json:"skipped,omitempty"`
	// Note is a non-fatal remark (e.g. a command hook printed non-JSON).
	Note string `json:"note,omitempty"`
}

// MarshalJSON writes the duration in milliseconds, the unit of every
// duration weave prints as JSON.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}{plain(r), r.Duration.Milliseconds()})
}

// Outcome is the aggregated decision of all hooks on one event.
type Outcome struct {
	// Action is Block if any hook blocked, else Modify if any hook changed
	// the arguments or text, else Allow.
	Action plugins.Action `json:"action"`
	// Reason is the blocking hook's reason, prefixed with its name.
	Reason string `json:"reason,omitempty"`
	// BlockedBy names the hook that blocked.
	BlockedBy string `json:"blocked_by,omitempty"`
	// Args are the effective tool (or command) arguments after every
	// modification; Text the effective message text.
	Args map[string]any `json:"args,omitempty"`
	Text string         `json:"text,omitempty"`
	// Context holds the context strings the hooks added, in run order.
	Context []string `json:"context,omitempty"`
	Reports []Report `json:"reports"`
	// Ask is set when the block is a tool.execute.before hook's ask (the
	// first one; a later block wins over it): the call may run if someone
	// approves it. A caller that does not ask anyone blocks, as Action says.
	Ask bool `json:"ask,omitempty"`
}

// Blocked reports whether the event must not proceed.
func (o Outcome) Blocked() bool { return o.Action == plugins.Block }

// Pipeline runs hooks on events in a fixed order and aggregates their
// decisions. It is safe for concurrent use; the hooks must be too.
type Pipeline struct {
	byEvent map[string][]Registered
	all     []Registered
	log     *slog.Logger
	timeout time.Duration
	onFail  func(plugins.Event, Report)
	// maxReason and maxContext bound a decision's texts.
	maxReason, maxContext int
}

// noteHandler is implemented by hooks that can explain a decision without
// failing (command hooks report unreadable output this way).
type noteHandler interface {
	handleWithNote(ctx context.Context, ev plugins.Event) (plugins.Decision, string, error)
}

// NewPipeline checks the hooks and orders them. Hooks named in
// opts.DisabledHooks are left out.
func NewPipeline(hooks []Registered, opts Options) (*Pipeline, error) {
	p := &Pipeline{
		byEvent: make(map[string][]Registered),
		log:     opts.Logger,
		timeout: opts.DefaultTimeout,
		onFail:  opts.OnFailClosed,

		maxReason: cmp.Or(max(opts.MaxReason, 0), MaxReason), maxContext: cmp.Or(max(opts.MaxContext, 0), MaxContext),
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	disabled := make(map[string]bool, len(opts.DisabledHooks))
	for _, n := range opts.DisabledHooks {
		disabled[n] = true
	}
	seen := make(map[string]bool, len(hooks))
	var errs []error
	for i, r := range hooks {
		if err := validateRegistered(r); err != nil {
			errs = append(errs, fmt.Errorf("hook %d: %w", i+1, err))
			continue
		}
		if seen[r.Info.Name] {
			errs = append(errs, fmt.Errorf("hook %q is registered twice; give each hook a distinct name", r.Info.Name))
			continue
		}
		seen[r.Info.Name] = true
		if disabled[r.Info.Name] {
			continue
		}
		p.all = append(p.all, r)
		for _, ev := range r.Info.Events {
			p.byEvent[ev] = append(p.byEvent[ev], r)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for n := range disabled {
		if !seen[n] {
			p.log.Warn("disabled_hooks names a hook that is not registered", "hook", n)
		}
	}
	for _, rs := range p.byEvent {
		sortRegistered(rs)
	}
	sortRegistered(p.all)
	return p, nil
}

func validateRegistered(r Registered) error {
	if r.Hook == nil {
		return fmt.Errorf("%q has no implementation", r.Info.Name)
	}
	if strings.TrimSpace(r.Info.Name) == "" {
		return errors.New("a hook has no name; set Info.Name")
	}
	if len(r.Info.Events) == 0 {
		return fmt.Errorf("hook %q handles no events; list them in Info.Events", r.Info.Name)
	}
	for _, ev := range r.Info.Events {
		if !slices.Contains(plugins.Events, ev) {
			return fmt.Errorf("hook %q: unknown event %q (known: %s)", r.Info.Name, ev, strings.Join(plugins.Events, ", "))
		}
	}
	if err := r.Info.CheckTools(); err != nil {
		return fmt.Errorf("hook %q: %w", r.Info.Name, err)
	}
	switch r.Fail {
	case FailDefault, FailClosed, FailOpen:
	default:
		return fmt.Errorf("hook %q: unknown failure policy %q (use closed or open)", r.Info.Name, r.Fail)
	}
	if r.Timeout < 0 {
		return fmt.Errorf("hook %q: negative timeout %s", r.Info.Name, r.Timeout)
	}
	return nil
}

// sortRegistered orders hooks by priority (lower first), then by name.
func sortRegistered(rs []Registered) {
	slices.SortStableFunc(rs, func(a, b Registered) int {
		if a.Info.Priority != b.Info.Priority {
			return a.Info.Priority - b.Info.Priority
		}
		return strings.Compare(a.Info.Name, b.Info.Name)
	})
}

// Hooks returns the enabled hooks in run order.
func (p *Pipeline) Hooks() []Registered { return slices.Clone(p.all) }

// For returns the enabled hooks that handle event, in run order.
func (p *Pipeline) For(event string) []Registered { return slices.Clone(p.byEvent[event]) }

// effectivePolicy resolves FailDefault for an event.
func effectivePolicy(fp FailPolicy, event string) FailPolicy {
	if fp != FailDefault {
		return fp
	}
	if event == plugins.EventToolExecuteBefore {
		return FailClosed
	}
	return FailOpen
}

// Run passes ev through every enabled hook that handles it, in order, and
// aggregates their decisions (see the package documentation for the rules).
// The error is non-nil only when the event is malformed or ctx ended; the
// outcome is then a block, so a caller that ignores the error still fails
// closed.
func (p *Pipeline) Run(ctx context.Context, ev plugins.Event) (Outcome, error) {
	out := Outcome{Action: plugins.Allow, Args: maps.Clone(ev.Args), Text: ev.Message}
	if !slices.Contains(plugins.Events, ev.Name) {
		out.Action = plugins.Block
		out.Reason = fmt.Sprintf("unknown hook event %q", ev.Name)
		return out, fmt.Errorf("run hooks: unknown event %q (known: %s)", ev.Name, strings.Join(plugins.Events, ", "))
	}
	modified := false
	askedBy, askReason := "", ""
	for _, r := range p.byEvent[ev.Name] {
		if !r.Info.Handles(ev.Name, ev.Tool) {
			continue // the hook does not handle this tool: not called, not reported
		}
		if out.Action == plugins.Block {
			out.Reports = append(out.Reports, Report{Hook: r.Info.Name, Source: r.Source, Skipped: true})
			continue
		}
		if err := ctx.Err(); err != nil {
			out.Action = plugins.Block
			out.Reason = "hooks did not finish: " + err.Error()
			return out, fmt.Errorf("run hooks for %s: %w", ev.Name, err)
		}
		cur := ev
		cur.Args = maps.Clone(out.Args)
		cur.Message = out.Text
		rep, d := p.call(ctx, r, cur)
		if err := ctx.Err(); err != nil && rep.Error != "" {
			// The caller gave up; the hook's failure is not its own.
			out.Reports = append(out.Reports, rep)
			out.Action = plugins.Block
			out.Reason = "hooks did not finish: " + err.Error()
			return out, fmt.Errorf("run hooks for %s: %w", ev.Name, err)
		}
		if d.Context != "" {
			out.Context = append(out.Context, d.Context)
		}
		if d.Action == plugins.Ask && ev.Name != plugins.EventToolExecuteBefore {
			d.Action = plugins.Block
		}
		switch d.Action {
		case plugins.Ask:
			// Asked: the hooks after it still run, and a block wins.
			if askedBy == "" {
				askedBy, askReason = r.Info.Name, d.Reason
			}
		case plugins.Block:
			out.Action = plugins.Block
			out.BlockedBy = r.Info.Name
			out.Reason = r.Info.Name + ": " + d.Reason
		case plugins.Modify:
			switch {
			case d.Args != nil:
				out.Args = maps.Clone(d.Args)
				modified = true
			case d.Text != "":
				out.Text = d.Text
				modified = true
			default:
				rep.Action = plugins.Allow
				rep.Note = joinNote(rep.Note, "modify without args or text; treated as allow")
			}
		}
		out.Reports = append(out.Reports, rep)
	}
	if out.Action != plugins.Block && askedBy != "" {
		out.Action, out.Ask = plugins.Block, true
		out.BlockedBy, out.Reason = askedBy, askedBy+": "+askReason
		return out, nil
	}
	if out.Action != plugins.Block && modified {
		out.Action = plugins.Modify
	}
	return out, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// call runs one hook with its timeout, turns a failure into a decision by
// the hook's policy, and reports it.
// The default bounds of one hook decision's texts, in bytes (Options has the
// configured ones); the rest is cut with a note of how much. Added context is for a model and may carry rules files
// (up to 64 KiB each), so its bound is wider.
const (
	MaxReason  = 8 << 10
	MaxContext = 1 << 20
)

func (p *Pipeline) call(ctx context.Context, r Registered, ev plugins.Event) (Report, plugins.Decision) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = p.timeout
	}
	if q, ok := r.Hook.(quiet); ok && q.Quiet(ev) {
		// Nothing would hear of ev: the hook allows it at once, without a
		// goroutine and a timer of its own, on every tool call of a run.
		return Report{Hook: r.Info.Name, Source: r.Source, Action: plugins.Allow}, plugins.Decision{Action: plugins.Allow}
	}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	type result struct {
		d        plugins.Decision
		note     string
		err      error
		panicked bool
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- result{err: fmt.Errorf("panic: %v\n%s", v, debug.Stack()), panicked: true}
			}
		}()
		var res result
		if nh, ok := r.Hook.(noteHandler); ok {
			res.d, res.note, res.err = nh.handleWithNote(hctx, ev)
		} else {
			res.d, res.err = r.Hook.Handle(hctx, ev)
		}
		done <- res
	}()

	var res result
	timedOut := false
	select {
	case res = <-done:
		// A hook that returns after its deadline has passed still timed out.
		if res.err != nil && hctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			timedOut = true
		}
	case <-hctx.Done():
		// The hook ignored its context; leave it behind and decide now.
		timedOut = ctx.Err() == nil
		res.err = hctx.Err()
	}
	rep := Report{Hook: r.Info.Name, Source: r.Source, Duration: time.Since(start), Note: res.note, Panicked: res.panicked, TimedOut: timedOut}

	if res.err == nil {
		if a := normalizeAction(res.d.Action); a == "" {
			res.err = fmt.Errorf("unknown action %q (use allow, block, modify or ask)", res.d.Action)
		} else {
			res.d.Action = a
		}
	}
	if res.err == nil {
		if res.d.Action == plugins.Ask && strings.TrimSpace(res.d.Reason) == "" {
			res.d.Reason = "needs approval"
		}
		if res.d.Action == plugins.Block && strings.TrimSpace(res.d.Reason) == "" {
			res.d.Reason = "blocked (the hook gave no reason)"
		}
		// A hook's words are shown, stored in state.json and logged: one
		// runaway hook must not grow them without limit.
		res.d.Reason = textcap.Cap(res.d.Reason, p.maxReason)
		res.d.Context = textcap.Cap(res.d.Context, p.maxContext)
		rep.Action = res.d.Action
		rep.Reason = res.d.Reason
		return rep, res.d
	}

	failure := res.err.Error()
	switch {
	case timedOut:
		failure = fmt.Sprintf("timed out after %s", timeout)
	case res.panicked:
		// Keep the first line for the reason; the stack goes to the log.
		failure, _, _ = strings.Cut(failure, "\n")
	}
	rep.Error = failure
	rep.Policy = effectivePolicy(r.Fail, ev.Name)
	p.log.Warn("hook failed", "hook", r.Info.Name, "event", ev.Name, "policy", rep.Policy, "error", res.err)
	if rep.Policy == FailClosed {
		d := plugins.Decision{Action: plugins.Block, Reason: fmt.Sprintf("hook %s failed (%s) and its failure policy is closed", r.Info.Name, failure)}
		rep.Action, rep.Reason = d.Action, d.Reason
		if p.onFail != nil {
			p.onFail(ev, rep)
		}
		return rep, d
	}
	rep.Action = plugins.Allow
	return rep, plugins.Decision{Action: plugins.Allow}
}

// quiet is a hook that can tell at once that it would allow an event
// without doing anything (a bus hook that no peer listens to).
type quiet interface{ Quiet(ev plugins.Event) bool }

// normalizeAction maps the empty action to Allow and rejects unknown ones by
// returning "".
func normalizeAction(a plugins.Action) plugins.Action {
	switch a {
	case "", plugins.Allow:
		return plugins.Allow
	case plugins.Block, plugins.Modify, plugins.Ask:
		return a
	}
	return ""
}

// RunOne runs a single hook on ev as the pipeline would, with default
// options; it backs `weave hooks test`.
func RunOne(ctx context.Context, r Registered, ev plugins.Event) (Outcome, error) {
	if !slices.Contains(r.Info.Events, ev.Name) {
		return Outcome{}, fmt.Errorf("hook %s does not handle event %q (it handles: %s); pick an event file for one of those",
			r.Info.Name, ev.Name, strings.Join(r.Info.Events, ", "))
	}
	p, err := NewPipeline([]Registered{r}, Options{})
	if err != nil {
		return Outcome{}, err
	}
	out, err := p.Run(ctx, ev)
	if err == nil && len(out.Reports) == 0 {
		// Say so rather than print a bare allow.
		out.Reports = []Report{{Hook: r.Info.Name, Source: r.Source, Skipped: true, Note: "the hook's matcher does not match this event"}}
	}
	return out, err
}
