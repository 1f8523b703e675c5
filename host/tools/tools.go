package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/instructions"
	"github.com/weavehq/weave/internal/permrule"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/internal/realpath"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// Argument names.
const (
	argPath       = "path"
	argContent    = "content"
	argOffset     = "offset"
	argLimit      = "limit"
	argOldString  = "old_string"
	argNewString  = "new_string"
	argReplaceAll = "replace_all"
	argCommand    = "command"
	argTimeout    = "timeout"
	argShell      = "shell"
	argErrexit    = "errexit"
	argPattern    = "pattern"
	argGlob       = "glob"
	argURL        = "url"
	argMethod     = "method"
	argAgent      = "agent"
	argPrompt     = "prompt"
	argTodos      = "todos"
	argTask       = "task"
	argPlan       = "plan"
)

// EventToolDenied is the name of the event published when the gate or a
// tool.execute.before hook refuses a call. It carries the caller in Agent,
// the call in Tool and Args, and in Data: "reason", "chain" and "by" (the
// gate, or the hook's name).
const EventToolDenied = "tool.denied"

// hookContextMarker separates a tool's output from what tool.execute.after
// hooks added to it.
const hookContextMarker = "\n\n--- added by hooks ---\n"

// Pipeline runs the tool hooks. *hooks.Pipeline implements it.
type Pipeline interface {
	Run(ctx context.Context, ev plugins.Event) (hooks.Outcome, error)
}

// Option configures Tools.
type Option func(*Tools)

// WithEventFunc sets where denial events go (the bus, later). It is called
// synchronously and must not block.
func WithEventFunc(f func(plugins.Event)) Option { return func(t *Tools) { t.publish = f } }

// WithProcs tracks the process groups of bash calls in s, so that the host's
// shutdown ends a command in flight with the kill sequence.
func WithProcs(s *proc.Set) Option { return func(t *Tools) { t.procs = s } }

// ModelFunc gives the model door of one agent in one session (see
// chat.Door.ModelFunc): what plugins.Host.Complete answers for it.
type ModelFunc func(session, agent string) func(context.Context, plugins.ChatRequest) (plugins.ChatResponse, error)

// WithModel sets the host's model door, which every agent the tools
// serve (delegated ones included) reaches through Services. Without it,
// Complete answers plugins.ErrNoModel.
func WithModel(m ModelFunc) Option { return func(t *Tools) { t.model = m } }

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option { return func(t *Tools) { t.log = l } }

// Tools executes tool calls for agents: every call passes the capability
// gate, then the tool.execute.before hooks, runs, and passes the
// tool.execute.after hooks. It is safe for concurrent use.
type Tools struct {
	project   string // as given, for events
	root      string // real path of the project
	cfg       *config.Config
	limits    config.ToolsConfig // cfg.Tools with unset limits defaulted
	gate      *Gate
	pipeline  Pipeline
	delegator Delegator
	// link records a delegation's child session; nil records nothing.
	link    func(parent, child, agent, callID string)
	watch   func(Activity)
	model   ModelFunc
	publish func(plugins.Event)
	log     *slog.Logger
	procs   *proc.Set // the process groups of bash calls; nil: untracked
	mcp     MCP       // the MCP servers' tools; nil: none
	// web is webfetch's address policy and how it resolves and dials
	// (webfetch_policy.go).
	web    webNet
	now    func() time.Time
	shells sync.Map // shell name -> its path on PATH (Tools.command)
	// copyBufs are the buffers bash calls read their output through
	// (outputSink).
	copyBufs sync.Pool
	// sb is the bash tool's sandbox: probed once (sandbox.go).
	sb sandboxing
	// slots bounds the calls of one session that run at once
	// (tools.max_parallel); the rest wait in arrival order.
	slots *slots

	mu    sync.Mutex
	todos map[string][]todo // by session
	// lastPlan is the plan plan_check last ticked, kept so that ticking a
	// large plan task after task does not parse it every time.
	lastPlan *plans.Plan
	// tick serializes the tick door: a tick patches the plan it is given
	// in place (plans.SetDoneIn), so the plan lastPlan holds is read and
	// ticked by one call at a time.
	tick sync.Mutex
	// owned is the plan whose checkboxes a run owns (OwnTicks), guarded by
	// tick; nil outside a run.
	owned *ownedPlan
	// skills are what the skill tool loads (WithSkills).
	skills []instructions.Skill
	// modelCtx, when set, adds to the context of every model call made
	// through these tools' services (WithModelContext).
	modelCtx func(context.Context) context.Context
	// narrowed holds, by session, the tools a turn is narrowed to
	// (Narrow).
	narrowed map[string]narrowing

	// perms is the permission rules (permissions.go); asker answers their
	// questions, nil: nobody can.
	perms perms
	asker Asker
}

// New returns the tools of project. cfg nil means defaults; pipeline
// may be nil (no hooks).
func New(project string, cfg *config.Config, gate *Gate, pipeline Pipeline, opts ...Option) (*Tools, error) {
	if gate == nil {
		return nil, errors.New("new tools: no capability gate; build one with NewGate")
	}
	if cfg == nil {
		cfg = config.Default()
	}
	abs, err := filepath.Abs(project)
	if err != nil {
		return nil, fmt.Errorf("new tools: resolve project %s: %w", project, err)
	}
	root, err := realpath.Resolve("", abs)
	if err != nil {
		return nil, fmt.Errorf("new tools: resolve project %s: %w", project, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("new tools: project %s is not a directory", project)
	}
	if isNil(pipeline) {
		pipeline = nil
	}
	t := &Tools{project: abs, root: root, cfg: cfg, limits: toolLimits(cfg.Tools), gate: gate, pipeline: pipeline,
		log: slog.New(slog.DiscardHandler), now: time.Now, todos: map[string][]todo{}}
	web, err := newWebNet(t.limits.WebFetch)
	if err != nil {
		return nil, fmt.Errorf("new tools: %w", err)
	}
	t.web = web
	t.slots = newSlots(t.limits.MaxParallel)
	for _, o := range opts {
		o(t)
	}
	policy, notes, err := loadPolicy(cfg, root)
	if err != nil {
		return nil, fmt.Errorf("permissions: %w", err)
	}
	for _, n := range notes {
		t.log.Warn("permissions: " + n)
	}
	t.perms = perms{policy: policy, allowed: map[string]map[string]bool{}}
	return t, nil
}

// toolLimits fills limits a hand-built config left at zero with the
// defaults; a loaded config has them all.
func toolLimits(tc config.ToolsConfig) config.ToolsConfig {
	def := config.Default().Tools
	if tc.MaxParallel <= 0 {
		tc.MaxParallel = def.MaxParallel
	}
	if tc.Read.MaxBytes <= 0 {
		tc.Read.MaxBytes = def.Read.MaxBytes
	}
	if tc.Bash.MaxOutputBytes <= 0 {
		tc.Bash.MaxOutputBytes = def.Bash.MaxOutputBytes
	}
	if tc.WebFetch.MaxBytes <= 0 {
		tc.WebFetch.MaxBytes = def.WebFetch.MaxBytes
	}
	return tc
}

// isNil catches a typed nil pointer passed as the pipeline interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// Activity is a tool call as a watcher sees it: once as it starts (Result
// nil) and once as it ends.
type Activity struct {
	Session string
	Caller  Caller
	Call    plugins.ToolCall
	// Result is what the call returned, nil at its start; Err is a call
	// that could not be made.
	Result *plugins.ToolResult
	Err    error
}

// WithWatch has f see every tool call start and end (see Activity), to
// show them as they happen. f must not block.
func WithWatch(f func(Activity)) Option { return func(t *Tools) { t.watch = f } }

// Call runs one tool call for caller in session. At most
// tools.max_parallel calls of one session run at once: a call over the
// bound waits, in arrival order, for one to end (or for ctx to end, and
// then returns its error without running).
func (t *Tools) Call(ctx context.Context, caller Caller, session string, call plugins.ToolCall) (plugins.ToolResult, error) {
	ctx, release, err := t.slots.acquire(ctx, session)
	if err != nil {
		return plugins.ToolResult{}, fmt.Errorf("%s: %w", call.Tool, err)
	}
	defer release()
	if t.watch == nil {
		return t.call(ctx, caller, session, call)
	}
	t.watch(Activity{Session: session, Caller: caller, Call: call})
	res, err := t.call(ctx, caller, session, call)
	t.watch(Activity{Session: session, Caller: caller, Call: call, Result: &res, Err: err})
	return res, err
}

func (t *Tools) call(ctx context.Context, caller Caller, session string, call plugins.ToolCall) (plugins.ToolResult, error) {
	args := call.Args
	if args == nil {
		args = map[string]any{}
	}
	if call.ID != "" {
		// The call's id goes with it: to the permission hooks, the tool.
		ctx = context.WithValue(ctx, callIDKey{}, call.ID)
	}
	if err := t.gate.check(ctx, t.root, caller, call.Tool, args); err != nil {
		return t.denied(caller, session, call.Tool, args, "gate", err), nil
	}
	if why := t.narrowedOut(session, call.Tool, args); why != "" {
		return t.denied(caller, session, call.Tool, args, "allowed-tools", errors.New(why)), nil
	}
	// A write to a host-owned file is refused before any hook sees it, so
	// that no hook's answer (a guard asking to read the file again first)
	// suggests the write could go through.
	if call.Tool == plugins.ToolWrite || call.Tool == plugins.ToolEdit {
		if real, _, err := t.pathOf(args); err == nil {
			asked, _ := plugins.ToolPath(args)
			if msg := t.ownedPath(asked, real); msg != "" {
				return refused(msg)
			}
		}
	}
	// The permission rules, under the gate: a deny stops the call before
	// any hook sees it; an ask is put once the hooks have had their say.
	rules := t.perms.policy.Decide(call.Tool, args)
	if rules.Verdict == permrule.Denied {
		return *t.permit(ctx, caller, session, call.Tool, args, rules, ""), nil
	}
	hookAsk := ""
	ev := plugins.Event{SessionID: session, Agent: caller.Role(), Cwd: t.project, Tool: call.Tool, Time: t.now()}
	if call.ID != "" {
		// Claude Code's hooks get the model's id of the call (tool_use_id).
		ev.Data = map[string]any{"tool_use_id": call.ID}
	}
	var modifiedBy string
	if t.pipeline != nil {
		ev.Name, ev.Args = plugins.EventToolExecuteBefore, maps.Clone(args)
		out, err := t.pipeline.Run(ctx, ev)
		if ctx.Err() != nil {
			return plugins.ToolResult{}, fmt.Errorf("%s: hooks before the call: %w", call.Tool, ctx.Err())
		}
		if err == nil && out.Ask {
			// A hook asks: the call runs only if someone approves it, and
			// with what the hooks made of its arguments.
			hookAsk = "hook " + out.Reason
			if out.Args != nil && !reflect.DeepEqual(out.Args, args) {
				out.Action = plugins.Modify
			}
		} else if err != nil || out.Blocked() {
			return t.hookBlocked(caller, session, call.Tool, args, out, err), nil
		}
		if out.Action == plugins.Modify && out.Args != nil {
			args = out.Args
			modifiedBy = modifiers(out.Reports)
			t.log.Warn("tool call modified by a hook", "agent", caller.String(), "tool", call.Tool, "hook", modifiedBy, "args", args)
			// Whoever watches the call's output (a run's view) sees that
			// what runs is not the command it was shown.
			if w := callScopeOf(ctx).output; w != nil {
				fmt.Fprintf(w, "[%s modified by hook %s: runs %s]\n", call.Tool, modifiedBy, argsSummary(args))
			}
			// A hook may change the arguments, not the rules: check again.
			if err := t.gate.check(ctx, t.root, caller, call.Tool, args); err != nil {
				return t.denied(caller, session, call.Tool, args, "gate", err), nil
			}
			if why := t.narrowedOut(session, call.Tool, args); why != "" {
				return t.denied(caller, session, call.Tool, args, "allowed-tools", errors.New(why)), nil
			}
			rules = t.perms.policy.Decide(call.Tool, args)
		}
	}
	if res := t.permit(ctx, caller, session, call.Tool, args, rules, hookAsk); res != nil {
		return *res, nil
	}
	res, err := t.execute(ctx, caller, session, call.Tool, args)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if call.Tool != plugins.ToolPlanCheck {
		// Any call may have written the plan a run owns (bash above all):
		// a checkbox it changed is put back, and the model is told.
		if note := t.keepTicks(); note != "" {
			if out := strings.TrimRight(res.Output, "\n"); out != "" {
				note = out + "\n\n" + note
			}
			res.Output = note
		}
	}
	// The hooks after the call see the result as the model will.
	res = capResult(res)
	if modifiedBy != "" {
		// Whoever reads the result (the run's output, the model) sees that
		// what ran is not what was asked, and which hook changed it.
		res.Output = fmt.Sprintf("[%s modified by hook %s: ran %s]\n", call.Tool, modifiedBy, argsSummary(args)) + res.Output
	}
	if t.pipeline != nil {
		ev.Name, ev.Args, ev.Result = plugins.EventToolExecuteAfter, maps.Clone(args), &res
		out, err := t.pipeline.Run(ctx, ev)
		if ctx.Err() != nil {
			return res, fmt.Errorf("%s: hooks after the call: %w", call.Tool, ctx.Err())
		}
		var added []string
		if err != nil {
			t.log.Warn("tool.execute.after hooks failed", "tool", call.Tool, "error", err)
		}
		added = append(added, out.Context...)
		if out.Blocked() {
			added = append(added, "hook "+out.Reason)
		}
		if len(added) > 0 {
			res.Output += hookContextMarker + strings.Join(added, "\n")
		}
	}
	return capResult(res), nil
}

// modifiers names the hooks that changed the arguments, in run order.
func modifiers(reports []hooks.Report) string {
	var names []string
	for _, r := range reports {
		if r.Action == plugins.Modify {
			names = append(names, r.Hook)
		}
	}
	if len(names) == 0 {
		return "hooks"
	}
	return strings.Join(names, ", ")
}

// argsSummary shows modified arguments briefly: a command as it ran, else
// the arguments as JSON, clipped.
func argsSummary(args map[string]any) string {
	if cmd, ok := args["command"].(string); ok {
		return strconv.Quote(clipRunes(cmd, 200))
	}
	raw, _ := json.Marshal(args)
	return clipRunes(string(raw), 200)
}

func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// For binds Call to one caller and session: the function an agent's host
// services (plugins.Host.CallTool) run its tool calls through.
func (t *Tools) For(caller Caller, session string) func(context.Context, plugins.ToolCall) (plugins.ToolResult, error) {
	return func(ctx context.Context, call plugins.ToolCall) (plugins.ToolResult, error) {
		return t.Call(ctx, caller, session, call)
	}
}

// hookBlocked is the result of a call the tool.execute.before hooks
// stopped: "blocked by hook <name>: <reason>", in the hook's words and
// never as a rule of the capability matrix. Hooks that failed (err) block
// too, as "blocked by hooks: <what failed>".
func (t *Tools) hookBlocked(c Caller, session, tool string, args map[string]any, out hooks.Outcome, err error) plugins.ToolResult {
	if !out.Blocked() || out.BlockedBy == "" {
		reason := out.Reason
		if reason == "" && err != nil {
			reason = err.Error()
		}
		return t.denied(c, session, tool, args, "hooks", errors.New("blocked by hooks: "+reason))
	}
	// The pipeline's Reason is "<name>: <reason>".
	reason := strings.TrimPrefix(out.Reason, out.BlockedBy+": ")
	res := t.denied(c, session, tool, args, out.BlockedBy, fmt.Errorf("blocked by hook %s: %s", out.BlockedBy, reason))
	// A hook's decision: the person reads it as the hook's, not as a rule
	// of the capability gate.
	res.BlockedBy, res.Reason = out.BlockedBy, reason
	return res
}

// denied turns a refusal into the result the agent reads and publishes it.
// The text is the refusal as err says it, naming its cause exactly
// ("denied by the capability matrix (thread has no write)", "blocked by
// hook <name>: <reason>"), and nothing else: a refusal that blamed another
// rule would send the model after the wrong one.
func (t *Tools) denied(c Caller, session, tool string, args map[string]any, by string, err error) plugins.ToolResult {
	msg := err.Error()
	t.log.Info("tool call denied", "agent", c.String(), "tool", tool, "by", by, "reason", msg)
	if t.publish != nil {
		t.publish(plugins.Event{Name: EventToolDenied, SessionID: session, Agent: c.Role(), Cwd: t.project,
			Tool: tool, Args: maps.Clone(args), Time: t.now(),
			Data: map[string]any{"reason": msg, "chain": c.String(), "by": by}})
	}
	return plugins.ToolResult{Output: msg, IsError: true, Denied: true, Reason: msg}
}

// execute runs a tool whose call was allowed.
func (t *Tools) execute(ctx context.Context, c Caller, session, tool string, args map[string]any) (plugins.ToolResult, error) {
	res, err := t.run(ctx, c, session, tool, args)
	var bad *argError
	if errors.As(err, &bad) {
		return failf("%s: %s", tool, bad.msg)
	}
	return res, err
}

func (t *Tools) run(ctx context.Context, c Caller, session, tool string, args map[string]any) (plugins.ToolResult, error) {
	if plugins.IsMCPTool(tool) {
		return t.runMCP(ctx, c, session, tool, args)
	}
	impl, ok := registry[tool]
	if !ok {
		return failf("there is no tool %q", tool)
	}
	return impl(ctx, t, call{caller: c, session: session, args: args, id: callID(ctx)})
}

// call is one allowed tool call as an implementation receives it.
type call struct {
	caller  Caller
	session string
	args    map[string]any
	// id is the model's id for the call, "" when none.
	id string
}

type callIDKey struct{}

// callID is the model's id of the call being run, carried in ctx from Call
// to the implementation, whose signature the hooks' path shares.
func callID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// impl carries out one tool.
type impl func(ctx context.Context, t *Tools, c call) (plugins.ToolResult, error)

// registry holds each tool's implementation by name. Each tool's file adds
// its own in init; nothing changes it after.
var registry = map[string]impl{}

// register adds the implementation of the tool called name, which must be
// a tool of the host's table (plugins.Tools). A second registration of a
// name, or an unknown name, is a programming error and panics.
func register(name string, f impl) {
	if !plugins.IsTool(name) {
		panic(fmt.Sprintf("tools: register %q: not in the table of tools (plugins.Tools)", name))
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("tools: %q registered twice", name))
	}
	registry[name] = f
}

// failf is a tool's domain failure: the agent reads it.
func failf(format string, a ...any) (plugins.ToolResult, error) {
	return plugins.ToolResult{Output: fmt.Sprintf(format, a...), IsError: true}, nil
}

func ok(format string, a ...any) (plugins.ToolResult, error) {
	return plugins.ToolResult{Output: fmt.Sprintf(format, a...)}, nil
}
