package tools

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/internal/permrule"
	"github.com/weavehq/weave/plugins"
)

// Asker puts a permission question to someone who can answer it: the
// person at the terminal of weave chat, or a peer on the bus. It is called
// from tool calls in flight, possibly at once from several sessions, and
// must return when ctx ends.
type Asker interface {
	AskPermission(ctx context.Context, q Question) (Answer, error)
}

// Question is one tool call waiting for approval.
type Question struct {
	Session string
	Caller  Caller
	Tool    string
	Args    map[string]any
	// Cause is what asks, as refusals name it: "rule Bash(rm:*)", "hook
	// guard: pushes to main", "defaultMode default: no allow rule matches".
	Cause string
}

// Answer is the reply to a Question.
type Answer struct {
	Allow bool
	// Session allows the same call (same command, file, host or tool) for
	// the rest of the session without asking again.
	Session bool
	// Reason is why it was denied; it reaches the model.
	Reason string
	// By names who answered, as the refusal says it: "the person asked".
	By string
}

// WithAsker sets who answers permission questions. Without one, a call
// that must be asked is denied, naming what asked.
func WithAsker(a Asker) Option { return func(t *Tools) { t.asker = a } }

// perms is the permission rules of the project and what was allowed for
// the rest of a session.
type perms struct {
	policy *permrule.Policy
	mu     sync.Mutex
	// allowed holds the calls a person allowed for a session, by session.
	allowed map[string]map[string]bool
}

// loadPolicy compiles the permissions of config and of the project's
// Claude Code settings files; config's defaultMode wins over theirs.
func loadPolicy(cfg *config.Config, root string) (*permrule.Policy, []string, error) {
	p := cfg.Permissions
	sets := []permrule.Set{{Origin: "config", Allow: p.Allow, Ask: p.Ask, Deny: p.Deny, DefaultMode: p.DefaultMode,
		AdditionalDirectories: p.AdditionalDirectories, DisableBypassPermissionsMode: p.DisableBypassPermissionsMode}}
	claude, notes, err := permrule.ReadClaude(root)
	if err != nil {
		return nil, nil, err
	}
	sets = append(sets, claude...)
	home, _ := os.UserHomeDir()
	policy, more, err := permrule.Compile(sets, root, home)
	return policy, append(notes, more...), err
}

// permit weighs the permission rules on a call the gate and the hooks let
// through. hookAsk is a tool.execute.before hook's request to ask ("" for
// none). It returns the refusal, or nil when the call may run.
func (t *Tools) permit(ctx context.Context, c Caller, session, tool string, args map[string]any, d permrule.Decision, hookAsk string) *plugins.ToolResult {
	cause := hookAsk
	switch d.Verdict {
	case permrule.Denied:
		res := t.denied(c, session, tool, args, "permissions", deniedByRule(d))
		return &res
	case permrule.Asked:
		cause = d.Cause()
	}
	if cause == "" {
		return nil
	}
	key := cause + "\x00" + tool + "\x00" + subject(tool, args)
	t.perms.mu.Lock()
	ok := t.perms.allowed[session][key]
	t.perms.mu.Unlock()
	if ok {
		return nil
	}
	// A PermissionRequest hook answers first.
	if res, decided := t.permissionHooks(ctx, c, session, tool, args, cause); decided {
		return res
	}
	if t.asker == nil {
		res := t.denied(c, session, tool, args, "permissions", fmt.Errorf("denied: asked, no one to answer (%s)", cause))
		return &res
	}
	ans, err := t.asker.AskPermission(ctx, Question{Session: session, Caller: c, Tool: tool, Args: maps.Clone(args), Cause: cause})
	switch {
	case err != nil && ctx.Err() != nil:
		res := t.denied(c, session, tool, args, "permissions", fmt.Errorf("denied: asked, the call was cancelled (%s)", cause))
		return &res
	case errors.Is(err, ErrNoOneToAnswer):
		res := t.denied(c, session, tool, args, "permissions", fmt.Errorf("denied: asked, no one to answer (%s)", cause))
		return &res
	case err != nil:
		res := t.denied(c, session, tool, args, "permissions", fmt.Errorf("denied: asked, %v (%s)", err, cause))
		return &res
	case !ans.Allow:
		by := ans.By
		if by == "" {
			by = "the one asked"
		}
		msg := fmt.Sprintf("denied by %s (%s)", by, cause)
		if r := strings.TrimSpace(ans.Reason); r != "" {
			msg += ": " + r
		}
		res := t.denied(c, session, tool, args, "permissions", errors.New(msg))
		return &res
	}
	if ans.Session {
		t.perms.mu.Lock()
		if t.perms.allowed[session] == nil {
			t.perms.allowed[session] = map[string]bool{}
		}
		t.perms.allowed[session][key] = true
		t.perms.mu.Unlock()
	}
	t.log.Info("tool call allowed when asked", "agent", c.String(), "tool", tool, "cause", cause, "by", ans.By, "session_wide", ans.Session)
	return nil
}

// ErrNoOneToAnswer is what an Asker returns when nobody can answer now.
var ErrNoOneToAnswer = errors.New("no one to answer")

// deniedByRule is a refusal by a deny rule or by the mode.
func deniedByRule(d permrule.Decision) error {
	if d.Rule != nil {
		return &DeniedError{Rule: "permission rule " + d.Rule.Text, Reason: "deny"}
	}
	why := "no allow rule matches"
	if d.Mode == permrule.ModePlan {
		why = "nothing is changed in plan mode"
	}
	return &DeniedError{Rule: "permission mode " + string(d.Mode), Reason: why}
}

// subject is what an approval for the session covers besides the cause
// and the tool: the command, the file, the host; "" for the whole tool.
func subject(tool string, args map[string]any) string {
	switch tool {
	case plugins.ToolBash:
		s, _ := args[argCommand].(string)
		return strings.Join(strings.Fields(s), " ")
	case plugins.ToolWebFetch:
		s, _ := args[argURL].(string)
		if u, err := url.Parse(s); err == nil {
			return strings.ToLower(u.Hostname())
		}
		return s
	}
	if p, ok := plugins.ToolPath(args); ok {
		return p
	}
	return ""
}

// permissionHooks runs the permission.request hooks on a call that must be
// asked: a block denies it in the hook's words, a modify approves it (as
// asked: the hook's arguments are not applied). decided is false when no
// hook answered, and the one asked decides.
func (t *Tools) permissionHooks(ctx context.Context, c Caller, session, tool string, args map[string]any, cause string) (*plugins.ToolResult, bool) {
	if t.pipeline == nil {
		return nil, false
	}
	ev := plugins.Event{Name: plugins.EventPermissionRequest, SessionID: session, Agent: c.Role(), Cwd: t.project, Tool: tool,
		Args: maps.Clone(args), Time: t.now(), Data: map[string]any{"cause": cause}}
	if id := callID(ctx); id != "" {
		ev.Data["tool_use_id"] = id
	}
	out, err := t.pipeline.Run(ctx, ev)
	switch {
	case err != nil:
		res := t.denied(c, session, tool, args, "hooks", fmt.Errorf("denied: asked, the permission hooks failed: %v (%s)", err, cause))
		return &res, true
	case out.Blocked():
		res := t.hookBlocked(c, session, tool, args, out, nil)
		return &res, true
	case out.Action == plugins.Modify:
		t.log.Info("tool call allowed by a permission hook", "agent", c.String(), "tool", tool, "cause", cause, "hook", modifiers(out.Reports))
		return nil, true
	}
	return nil, false
}
