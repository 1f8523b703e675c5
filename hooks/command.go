package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/internal/safefile"
	"github.com/weavehq/weave/internal/textcap"
	"github.com/weavehq/weave/plugins"
)

// DefaultCommandTimeout bounds a command hook without its own timeout, as in
// Claude Code.
const DefaultCommandTimeout = 60 * time.Second

// maxCommandOutput bounds a command hook's stdout and stderr, each: a hook
// that prints more is stopped and fails (its failure policy applies).
const maxCommandOutput = 1 << 20

// CommandSpec is one command hook from config, in Claude Code's terms.
type CommandSpec struct {
	// Name identifies the hook for disabled_hooks and `weave hooks test`;
	// empty means "command.<Event>.<n>" (n counts from 1 in config order).
	Name string
	// Event is the Claude Code event: PreToolUse, PostToolUse,
	// UserPromptSubmit, Stop, SessionStart, SessionEnd or PreCompact.
	Event string
	// Matcher is a regular expression matched against the whole Claude tool
	// name (Bash, Edit|Write, ...); "" or "*" matches every tool. It only
	// applies to PreToolUse and PostToolUse.
	Matcher string
	// Command runs with `sh -c` in the project directory (a command hook).
	Command string
	// URL makes it an http hook: the event's JSON is POSTed there, with
	// Headers, whose $VAR and ${VAR} are replaced by the variables
	// AllowedEnvVars names (by nothing for others); the answer's body is
	// read as a command's stdout (http.go).
	URL            string
	Headers        map[string]string
	AllowedEnvVars []string
	// If narrows a tool hook with a permission rule, "Bash(git push*)"
	// (claudeif.go); "" runs on every call the matcher takes.
	If string
	// Async runs the hook without waiting: the event goes on at once and
	// what the hook answers is only logged.
	Async bool
	// Once runs the hook on the first of its events in a session only.
	Once bool
	// StatusMessage says what the hook does while it runs (in the log).
	StatusMessage string
	// Timeout bounds one run; zero means DefaultCommandTimeout.
	Timeout time.Duration
	// Priority orders the hook among the others (lower first).
	Priority int
	// Fail is the failure policy; empty means open, as in Claude Code,
	// where a failing command hook never blocks.
	Fail FailPolicy
}

// CommandOptions configure how command hooks run.
type CommandOptions struct {
	// ProjectDir is the working directory and CLAUDE_PROJECT_DIR.
	ProjectDir string
	// Env is the host environment the hook's environment is picked from
	// (proc.CommandHook: everything but secrets); nil means the host's.
	Env []string
	// Hide names further host variables the hook must not get
	// (model.api_key_env).
	Hide []string
	// Procs tracks the hook's process group, so that the host's shutdown
	// ends a hook in flight; nil runs it untracked. Either way nothing the
	// hook starts outlives its run.
	Procs *proc.Set
	// PluginRoot is the folder of the plugin whose hooks.json brought the
	// hooks, set as CLAUDE_PLUGIN_ROOT; "" for the project's own hooks,
	// whose CLAUDE_PLUGIN_ROOT is the project directory, so that a hook
	// pasted from a plugin finds "${CLAUDE_PLUGIN_ROOT}/scripts/..." in the
	// project rather than at the root of the file system.
	PluginRoot string
	// Logf, when set, receives what an async hook ended with and a hook's
	// statusMessage.
	Logf func(format string, args ...any)
	// HTTPClient posts http hooks; nil uses a plain client (the hook's
	// timeout bounds each request).
	HTTPClient *http.Client
}

// CommandHook runs a shell command as a hook, speaking Claude Code's hook
// protocol.
type CommandHook struct {
	spec    CommandSpec
	event   string
	matcher *regexp.Regexp
	opts    CommandOptions
	// desc is the hook's Info, computed once: the pipeline and Handle read
	// it on every event.
	desc plugins.Info
	// rule is the spec's If, parsed.
	rule *ifRule
	// ran records the sessions a Once hook has run in.
	ran sync.Map
}

// NewCommandHook checks spec and returns its hook.
func NewCommandHook(spec CommandSpec, opts CommandOptions) (*CommandHook, error) {
	ev, ok := WeaveEvent(spec.Event)
	if !ok {
		return nil, fmt.Errorf("command hook %q: unknown event %q (use one of: %s)", spec.Name, spec.Event, strings.Join(ClaudeFiredEventNames(), ", "))
	}
	if strings.TrimSpace(spec.Command) == "" && spec.URL == "" {
		return nil, fmt.Errorf("command hook %q on %s: empty command", spec.Name, spec.Event)
	}
	var err error
	var rule *ifRule
	if spec.If != "" {
		if rule, err = parseIf(spec.If); err != nil {
			return nil, fmt.Errorf("hook %q on %s: if %q: %w", spec.Name, spec.Event, spec.If, err)
		}
	}
	if spec.Timeout < 0 {
		return nil, fmt.Errorf("command hook %q: negative timeout %s", spec.Name, spec.Timeout)
	}
	h := &CommandHook{spec: spec, event: ev, opts: opts, rule: rule}
	if m := spec.Matcher; m != "" && m != "*" {
		re, err := regexp.Compile("^(?:" + m + ")$")
		if err != nil {
			return nil, fmt.Errorf("command hook %q: matcher %q is not a valid regular expression: %w", spec.Name, m, err)
		}
		h.matcher = re
	}
	if h.spec.Timeout == 0 {
		h.spec.Timeout = DefaultCommandTimeout
	}
	h.desc = h.describe()
	return h, nil
}

// CommandHooks turns config specs into registered hooks, naming unnamed ones
// command.<Event>.<n>.
func CommandHooks(specs []CommandSpec, opts CommandOptions) ([]Registered, error) {
	var out []Registered
	var errs []error
	for i, s := range specs {
		if s.Name == "" {
			s.Name = fmt.Sprintf("command.%s.%d", s.Event, i+1)
		}
		h, err := NewCommandHook(s, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, h.Registered())
	}
	return out, errors.Join(errs...)
}

// Registered returns the hook ready for a pipeline.
func (h *CommandHook) Registered() Registered {
	fail := h.spec.Fail
	if fail == FailDefault {
		fail = FailOpen
	}
	detail := h.spec.Event
	if h.matcher != nil {
		detail += "[" + h.spec.Matcher + "]"
	}
	return Registered{
		Hook:    h,
		Info:    h.info(),
		Timeout: h.spec.Timeout,
		Fail:    fail,
		Source:  SourceCommand,
		Detail:  detail + ": " + h.what(),
	}
}

func (h *CommandHook) info() plugins.Info { return h.desc }

// what is the command an http hook's URL.
func (h *CommandHook) what() string {
	if h.spec.URL != "" {
		return "POST " + h.spec.URL
	}
	return h.spec.Command
}

func (h *CommandHook) describe() plugins.Info {
	info := plugins.Info{Name: h.spec.Name, Version: "command", Kind: plugins.KindHook, Events: []string{h.event}, Priority: h.spec.Priority}
	if b := claudeEvents[h.spec.Event]; b.tools != nil {
		// The matcher picks among something else (a delegated agent):
		// the hook declares the binding's tools.
		info.Tools = map[string][]string{h.event: b.tools}
	} else if h.matcher != nil && plugins.ToolEvent(h.event) {
		// The matcher becomes the tools the hook declares, so that the
		// pipeline skips this hook as it skips any hook that does not
		// handle a tool.
		tools := []string{}
		for _, d := range plugins.Tools() {
			if h.matcher.MatchString(ClaudeToolName(d.Name)) {
				tools = append(tools, d.Name)
			}
		}
		// MCP tools are not known until their servers answer: a matcher
		// that may match one (mcp__github__.*, .*) declares the MCP tools
		// its literal prefix allows, and Handle matches the name itself.
		for _, p := range mcpPrefixes(h.spec.Matcher) {
			tools = append(tools, p+"*")
		}
		info.Tools = map[string][]string{h.event: tools}
	}
	return info
}

// Info describes the hook.
func (h *CommandHook) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// transcriptPath is where the host keeps session's transcript in project,
// as Claude Code's transcript_path: "" without a session or a project.
func transcriptPath(project, session string) string {
	if project == "" || session == "" || filepath.Base(session) != session || strings.HasPrefix(session, ".") {
		return ""
	}
	abs, err := filepath.Abs(project)
	if err != nil {
		return ""
	}
	return layout.NewProject(abs).Transcript(session)
}

// Handle runs the command on ev.
func (h *CommandHook) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	d, _, err := h.handleWithNote(ctx, ev)
	return d, err
}

func (h *CommandHook) handleWithNote(ctx context.Context, ev plugins.Event) (plugins.Decision, string, error) {
	allow := plugins.Decision{Action: plugins.Allow}
	if !h.desc.Handles(ev.Name, ev.Tool) || !claudeFires(h.spec.Event, ev) || !h.rule.matches(ev) {
		return allow, "", nil
	}
	if on := claudeEvents[h.spec.Event].matchOn; on != nil && h.matcher != nil && !h.matcher.MatchString(on(ev)) {
		return allow, "", nil
	}
	if h.spec.Once {
		if _, done := h.ran.LoadOrStore(ev.SessionID, true); done {
			return allow, "", nil
		}
	}
	if _, mcp := plugins.MCPServerOf(ev.Tool); mcp && h.matcher != nil && plugins.ToolEvent(ev.Name) && !h.matcher.MatchString(ev.Tool) {
		return plugins.Decision{Action: plugins.Allow}, "", nil
	}
	dir := h.opts.ProjectDir
	if dir == "" {
		dir = ev.Cwd
	}
	if ev.Cwd == "" {
		// A hook always learns where it runs, as Claude Code's do.
		ev.Cwd = dir
	}
	if p := transcriptPath(dir, ev.SessionID); p != "" && dataString(ev, "transcript_path", "") == "" {
		ev.Data = maps.Clone(ev.Data)
		if ev.Data == nil {
			ev.Data = map[string]any{}
		}
		ev.Data["transcript_path"] = p
	}
	input, err := ClaudeInput(ev, h.spec.Event)
	if err != nil {
		return plugins.Decision{}, "", err
	}
	if h.spec.Async {
		// The event goes on at once; the hook runs on, bounded by its own
		// timeout and tracked with the host's processes, and what it
		// answers changes nothing.
		go func() {
			if _, _, _, err := h.run(context.WithoutCancel(ctx), dir, input); err != nil && h.opts.Logf != nil {
				h.opts.Logf("async hook %s: %v", h.spec.Name, err)
			}
		}()
		return allow, "", nil
	}
	stdout, errText, code, err := h.run(ctx, dir, input)
	if err != nil {
		return plugins.Decision{}, "", err
	}
	switch code {
	case 0:
		d, note := h.interpret(ev, stdout)
		return d, note, nil
	case 2:
		reason := textcap.Cap(errText, MaxReason)
		if reason == "" {
			reason = fmt.Sprintf("command hook %s exited 2 without a message", h.spec.Name)
		}
		return h.block(ev, reason), "", nil
	default:
		msg := fmt.Sprintf("command hook %s exited %d", h.spec.Name, code)
		if code < 0 {
			msg = fmt.Sprintf("command hook %s was killed by a signal", h.spec.Name)
		}
		if h.spec.URL != "" {
			msg = fmt.Sprintf("http hook %s answered %s", h.spec.Name, errText)
			errText = ""
		}
		if errText != "" {
			msg += ": " + firstLines(errText, 5)
		}
		return plugins.Decision{}, "", errors.New(msg)
	}
}

// run runs the hook once on input, an http hook by POSTing it, and
// returns what a command would: its stdout, stderr and exit code.
func (h *CommandHook) run(ctx context.Context, dir string, input []byte) (stdout []byte, stderr string, code int, err error) {
	ctx, cancel := context.WithTimeout(ctx, h.spec.Timeout)
	defer cancel()
	if h.spec.StatusMessage != "" && h.opts.Logf != nil {
		h.opts.Logf("hook %s: %s", h.spec.Name, h.spec.StatusMessage)
	}
	if h.spec.URL != "" {
		return h.post(ctx, input)
	}
	// Output past the limit ends the run as a timeout does: the kill
	// sequence stops the hook's group, and the cause says why.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)

	cmd := exec.Command("sh", "-c", h.spec.Command)
	cmd.Dir = dir
	cmd.Env = proc.Env(proc.CommandHook, proc.EnvOptions{Environ: h.opts.Env, Hide: h.opts.Hide, Set: h.envSet(dir)})
	cmd.Stdin = bytes.NewReader(input)
	out := &boundedOutput{stream: "stdout", limit: maxCommandOutput, over: stop}
	errOut := &boundedOutput{stream: "stderr", limit: maxCommandOutput, over: stop}
	cmd.Stdout, cmd.Stderr = out, errOut
	// A background grandchild holding the pipes must not hold the hook
	// where the group's leftovers cannot be killed at the shell's exit.
	cmd.WaitDelay = time.Second

	g, err := h.opts.Procs.Start(cmd, "command hook "+h.spec.Name)
	if err != nil {
		return nil, "", 0, fmt.Errorf("command hook %s: run %q: %w", h.spec.Name, h.spec.Command, err)
	}
	// The hook's process group ends with the hook: on a timeout through the
	// kill sequence, otherwise as soon as the shell exits.
	runErr := g.Wait(ctx)
	var over *outputLimitError
	if errors.As(context.Cause(ctx), &over) {
		return nil, "", 0, fmt.Errorf("command hook %s: %w", h.spec.Name, over)
	}
	if ctx.Err() != nil {
		return nil, "", 0, fmt.Errorf("command hook %s: %w", h.spec.Name, ctx.Err())
	}
	var ee *exec.ExitError
	switch {
	case runErr == nil:
	case errors.Is(runErr, exec.ErrWaitDelay) && cmd.ProcessState != nil:
		// The shell exited but something it left running kept the pipes
		// open; its exit status still stands.
		code = cmd.ProcessState.ExitCode()
	default:
		if !errors.As(runErr, &ee) {
			return nil, "", 0, fmt.Errorf("command hook %s: run %q: %w", h.spec.Name, h.spec.Command, runErr)
		}
		code = ee.ExitCode()
	}
	return out.Bytes(), strings.TrimSpace(errOut.String()), code, nil
}

// envSet is what a command hook's environment gets on top of the
// person's: CLAUDE_PROJECT_DIR as Claude Code sets it (the project's root),
// WEAVE_PROJECT_DIR, and CLAUDE_PLUGIN_ROOT: the folder of the plugin
// whose hooks.json brought the hook, the project for the project's own.
func (h *CommandHook) envSet(dir string) []string {
	root := h.opts.PluginRoot
	if root == "" {
		root = dir
	}
	return []string{"CLAUDE_PROJECT_DIR=" + dir, "WEAVE_PROJECT_DIR=" + dir, "CLAUDE_PLUGIN_ROOT=" + root}
}

// block turns Claude's "block" into a Weave decision. On Stop, Claude's block
// means "do not stop: keep working, here is why", which for Weave is a
// continuation prompt on session.idle, not a block. On SessionStart and
// SessionEnd a block only shows a message in Claude Code; nothing is stopped.
func (h *CommandHook) block(ev plugins.Event, reason string) plugins.Decision {
	switch h.spec.Event {
	case ClaudeStop:
		return plugins.Decision{Action: plugins.Allow, Context: reason}
	case ClaudeSessionStart, ClaudeSessionEnd, ClaudeSubagentStart:
		return plugins.Decision{Action: plugins.Allow}
	case ClaudeSubagentStop:
		// The delegated agent has ended; the reason goes to the model that
		// delegated, beside the answer.
		return plugins.Decision{Action: plugins.Allow, Context: reason}
	}
	return plugins.Decision{Action: plugins.Block, Reason: reason}
}

// claudeOutput is the JSON a Claude Code hook may print on stdout.
type claudeOutput struct {
	Continue           *bool           `json:"continue"`
	StopReason         string          `json:"stopReason"`
	Decision           string          `json:"decision"`
	Reason             string          `json:"reason"`
	SystemMessage      string          `json:"systemMessage"`
	UpdatedInput       map[string]any  `json:"updatedInput"`
	HookSpecificOutput *claudeSpecific `json:"hookSpecificOutput"`
}

// claudeSpecific is a Claude Code hook's hookSpecificOutput.
type claudeSpecific struct {
	HookEventName            string         `json:"hookEventName"`
	PermissionDecision       string         `json:"permissionDecision"`
	PermissionDecisionReason string         `json:"permissionDecisionReason"`
	AdditionalContext        string         `json:"additionalContext"`
	UpdatedInput             map[string]any `json:"updatedInput"`
	// Decision is PermissionRequest's answer (permissionrequest.go).
	Decision *permissionDecision `json:"decision"`
}

// interpret reads the stdout of a command that exited 0.
func (h *CommandHook) interpret(ev plugins.Event, stdout []byte) (plugins.Decision, string) {
	text := strings.TrimSpace(string(stdout))
	allow := plugins.Decision{Action: plugins.Allow}
	if text == "" {
		return allow, ""
	}
	if !strings.HasPrefix(text, "{") {
		// Claude Code adds plain stdout to the context on these two events
		// and only shows it elsewhere.
		if h.spec.Event == ClaudeUserPromptSubmit || h.spec.Event == ClaudeSessionStart {
			return plugins.Decision{Action: plugins.Allow, Context: text}, ""
		}
		return allow, "stdout is not JSON; ignored: " + firstLines(text, 1)
	}
	var out claudeOutput
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return allow, "stdout is not valid JSON; ignored: " + err.Error()
	}
	var d plugins.Decision
	d.Action = plugins.Allow
	if hs := out.HookSpecificOutput; hs != nil {
		d.Context = hs.AdditionalContext
	}
	withContext := func(x plugins.Decision) plugins.Decision {
		if x.Context == "" {
			x.Context = d.Context
		} else if d.Context != "" {
			x.Context = d.Context + "\n" + x.Context
		}
		return x
	}
	if out.Continue != nil && !*out.Continue {
		reason := out.StopReason
		if reason == "" {
			reason = fmt.Sprintf("command hook %s asked to stop (continue: false)", h.spec.Name)
		}
		// continue:false stops everything, Stop included: never a nudge.
		return withContext(plugins.Decision{Action: plugins.Block, Reason: reason}), ""
	}
	if h.spec.Event == ClaudePermissionRequest {
		return withContext(h.permissionRequest(ev, out.HookSpecificOutput)), ""
	}
	if hs := out.HookSpecificOutput; hs != nil {
		switch hs.PermissionDecision {
		case "deny":
			return withContext(h.block(ev, orDefault(hs.PermissionDecisionReason, "denied by command hook "+h.spec.Name))), ""
		case "ask":
			// Someone is asked before the call runs (the person at weave
			// chat's terminal, a bus peer); where nobody can answer, the
			// call is denied.
			reason := "needs approval"
			if hs.PermissionDecisionReason != "" {
				reason += ": " + hs.PermissionDecisionReason
			}
			if h.event == plugins.EventToolExecuteBefore {
				return withContext(plugins.Decision{Action: plugins.Ask, Reason: reason}), ""
			}
			return withContext(h.block(ev, reason)), ""
		case "", "allow", "defer":
		default:
			return d, fmt.Sprintf("unknown permissionDecision %q; ignored", hs.PermissionDecision)
		}
	}
	switch out.Decision {
	case "block":
		return withContext(h.block(ev, orDefault(out.Reason, "blocked by command hook "+h.spec.Name))), ""
	case "", "approve", "allow":
	default:
		return d, fmt.Sprintf("unknown decision %q; ignored", out.Decision)
	}
	upd := out.UpdatedInput
	if hs := out.HookSpecificOutput; hs != nil && hs.UpdatedInput != nil {
		upd = hs.UpdatedInput
	}
	if upd != nil && h.event == plugins.EventToolExecuteBefore {
		// updatedInput may name only the fields it changes.
		args := maps.Clone(ev.Args)
		if args == nil {
			args = map[string]any{}
		}
		maps.Copy(args, WeaveToolArgs(ev.Tool, upd))
		d.Action = plugins.Modify
		d.Args = args
	}
	return d, ""
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}

// outputLimitError says that a hook printed more than it may on one stream;
// the hook was stopped and its output is not interpreted.
type outputLimitError struct {
	Stream string // "stdout" or "stderr"
	Limit  int
}

func (e *outputLimitError) Error() string {
	return fmt.Sprintf("%s passed the output limit of %s, so the hook was stopped", e.Stream, safefile.FormatSize(int64(e.Limit)))
}

// boundedOutput collects a hook's stdout or stderr up to limit bytes. The
// first write past the limit calls over once (which stops the hook);
// later writes are discarded, so the pipe keeps draining until the hook is
// gone and memory never grows past limit. It is deliberately not a
// bytes.Buffer: io.Copy would use a Buffer's ReadFrom and skip Write, and
// with it the limit.
type boundedOutput struct {
	stream string
	limit  int
	over   func(error)

	mu       sync.Mutex
	buf      []byte
	exceeded bool
}

func (b *boundedOutput) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.exceeded {
		return len(p), nil
	}
	if room := b.limit - len(b.buf); len(p) > room {
		b.buf = append(b.buf, p[:room]...)
		b.exceeded = true
		b.over(&outputLimitError{Stream: b.stream, Limit: b.limit})
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// Bytes returns what was kept.
func (b *boundedOutput) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf
}

func (b *boundedOutput) String() string { return string(b.Bytes()) }

var _ io.Writer = (*boundedOutput)(nil)

// Interface guards.
var (
	_ plugins.Hook = (*CommandHook)(nil)
	_ noteHandler  = (*CommandHook)(nil)
)

// mcpPrefixes are the prefixes of MCP tool names a matcher may match, one
// per alternative: "mcp__github__" for "mcp__github__.*", "mcp__" for ".*"
// or "mcp__.*", none for "Edit|Write" (literal names of other tools).
func mcpPrefixes(matcher string) []string {
	re, err := syntax.Parse(matcher, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	alts := []*syntax.Regexp{re}
	if re.Op == syntax.OpAlternate {
		alts = re.Sub
	}
	var out []string
	for _, a := range alts {
		r, err := regexp.Compile("^(?:" + a.String() + ")$")
		if err != nil {
			continue
		}
		lit, _ := r.LiteralPrefix()
		p := ""
		switch {
		case strings.HasPrefix(lit, plugins.MCPPrefix):
			p = lit
		case strings.HasPrefix(plugins.MCPPrefix, lit):
			p = plugins.MCPPrefix
		default:
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
