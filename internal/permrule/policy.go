package permrule

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weavehq/weave/internal/realpath"
	"github.com/weavehq/weave/plugins"
)

// Mode is Claude Code's defaultMode: what a call no rule decides does.
type Mode string

// The modes. The zero Mode is Weave's own: a call no rule decides is left
// to the capability matrix, as under bypassPermissions.
const (
	ModeUnset       Mode = ""
	ModeDefault     Mode = "default"
	ModeAcceptEdits Mode = "acceptEdits"
	ModePlan        Mode = "plan"
	ModeBypass      Mode = "bypassPermissions"
	ModeDontAsk     Mode = "dontAsk"
)

// Modes lists the values defaultMode accepts.
func Modes() []string {
	return []string{string(ModeDefault), string(ModeAcceptEdits), string(ModePlan), string(ModeBypass), string(ModeDontAsk)}
}

// Kind is which list a rule is on.
type Kind string

// The lists.
const (
	Allow Kind = "allow"
	Ask   Kind = "ask"
	Deny  Kind = "deny"
)

// Verdict is what a Policy says about one call.
type Verdict int

// The verdicts.
const (
	// Pass: no rule decides; the capability matrix does.
	Pass Verdict = iota
	// Allowed by an allow rule.
	Allowed
	// Asked: a person (or a bus peer) must approve the call.
	Asked
	// Denied by a deny rule or the mode.
	Denied
)

// Decision is a Policy's answer for one call.
type Decision struct {
	Verdict Verdict
	// Rule is the rule that decided, nil when the mode did.
	Rule *Rule
	// Mode is set when the mode decided.
	Mode Mode
}

// Cause names what decided, as refusals say it: "rule Bash(rm:*)", or
// "defaultMode default: no allow rule matches".
func (d Decision) Cause() string {
	if d.Rule != nil {
		return "rule " + d.Rule.Text
	}
	switch d.Mode {
	case ModePlan:
		return "defaultMode plan: nothing is changed"
	case ModeDontAsk:
		return "defaultMode dontAsk: no allow rule matches"
	}
	return fmt.Sprintf("defaultMode %s: no allow rule matches", d.Mode)
}

// Policy is the rules of every source. It is immutable once built and safe
// for concurrent use.
type Policy struct {
	allow, ask, deny []Rule
	mode             Mode
	root, home       string
}

// NewPolicy builds a policy. root is the project directory (for /path and
// relative path rules and for the tools' relative paths), home the user's
// home directory (~/path).
func NewPolicy(allow, ask, deny []Rule, mode Mode, root, home string) *Policy {
	return &Policy{allow: allow, ask: ask, deny: deny, mode: mode, root: root, home: home}
}

// Empty reports whether the policy can say anything but Pass.
func (p *Policy) Empty() bool {
	return p == nil || len(p.allow)+len(p.ask)+len(p.deny) == 0 && (p.mode == ModeUnset || p.mode == ModeBypass)
}

// Mode is the policy's default mode.
func (p *Policy) Mode() Mode { return p.mode }

// Rules returns the rules of one list.
func (p *Policy) Rules(k Kind) []Rule {
	switch k {
	case Allow:
		return slices.Clone(p.allow)
	case Ask:
		return slices.Clone(p.ask)
	}
	return slices.Clone(p.deny)
}

// changes lists the tools that change things or reach out, which the
// asking modes ask about and plan refuses; MCP tools count too.
func changes(tool string) bool {
	switch tool {
	case plugins.ToolBash, plugins.ToolWrite, plugins.ToolEdit, plugins.ToolWebFetch:
		return true
	}
	return strings.HasPrefix(tool, mcpPrefix)
}

// Decide weighs one call: deny rules, then ask rules, then the plan mode,
// then allow rules, then the default mode.
func (p *Policy) Decide(tool string, args map[string]any) Decision {
	if p.Empty() {
		return Decision{}
	}
	c := p.call(tool, args)
	for i := range p.deny {
		if p.match(p.deny[i], c, false) {
			return Decision{Verdict: Denied, Rule: &p.deny[i]}
		}
	}
	for i := range p.ask {
		if p.match(p.ask[i], c, false) {
			return Decision{Verdict: Asked, Rule: &p.ask[i]}
		}
	}
	if p.mode == ModePlan && changes(tool) {
		return Decision{Verdict: Denied, Mode: p.mode}
	}
	if r := p.allowedBy(c); r != nil {
		return Decision{Verdict: Allowed, Rule: r}
	}
	switch p.mode {
	case ModeDefault, ModeAcceptEdits:
		if !changes(tool) || p.mode == ModeAcceptEdits && (tool == plugins.ToolWrite || tool == plugins.ToolEdit) {
			return Decision{}
		}
		return Decision{Verdict: Asked, Mode: p.mode}
	case ModeDontAsk:
		if changes(tool) {
			return Decision{Verdict: Denied, Mode: p.mode}
		}
	}
	return Decision{}
}

// allowedBy is the allow rule that allows c: for a bash command, one that
// every part is matched by (the first part's), and only a command whose
// whole effect its text shows.
func (p *Policy) allowedBy(c call) *Rule {
	if c.tool != plugins.ToolBash {
		for i := range p.allow {
			if p.match(p.allow[i], c, true) {
				return &p.allow[i]
			}
		}
		return nil
	}
	var first *Rule
	for i := range p.allow {
		if p.allow[i].Applies(c.tool) && p.allow[i].pattern() == "" {
			return &p.allow[i] // Bash alone allows every command
		}
	}
	if c.cmd.opaque || len(c.cmd.parts) == 0 {
		return nil
	}
	for _, part := range c.cmd.parts {
		var by *Rule
		for i := range p.allow {
			if p.allow[i].Applies(c.tool) && matchCommand(p.allow[i].pattern(), part) {
				by = &p.allow[i]
				break
			}
		}
		if by == nil {
			return nil
		}
		if first == nil {
			first = by
		}
	}
	return first
}

// call is one tool call as the rules see it.
type call struct {
	tool string
	// cmd is a bash call's command, split.
	cmd command
	raw string
	// paths are the call's path as given (absolute) and as its real path.
	paths []string
	// host is a webfetch's host; agent a task's target.
	host, agent string
}

func (p *Policy) call(tool string, args map[string]any) call {
	c := call{tool: tool}
	switch tool {
	case plugins.ToolBash:
		c.raw, _ = args["command"].(string)
		c.cmd = splitCommand(c.raw)
	case plugins.ToolWebFetch:
		s, _ := args["url"].(string)
		if u, err := url.Parse(strings.TrimSpace(s)); err == nil {
			c.host = strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
		}
	case plugins.ToolTask:
		c.agent, _ = args["agent"].(string)
		c.agent = strings.ToLower(strings.TrimSpace(c.agent))
	}
	if pth, ok := plugins.ToolPath(args); ok || tool == plugins.ToolGlob || tool == plugins.ToolGrep {
		if !ok {
			pth = "."
		}
		abs := pth
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(p.root, abs)
		}
		c.paths = append(c.paths, filepath.Clean(abs))
		if real, err := realpath.Resolve(p.root, pth); err == nil && real != c.paths[0] {
			c.paths = append(c.paths, real)
		}
	}
	return c
}

// matches reports whether r matches c. forAllow is set when an allow rule
// is weighed: it must match every way of reading the call, where a deny or
// ask rule matches any.
func (p *Policy) match(r Rule, c call, forAllow bool) bool {
	if !r.Applies(c.tool) {
		return false
	}
	pat := r.pattern()
	if pat == "" {
		return true
	}
	switch c.tool {
	case plugins.ToolBash:
		if forAllow {
			return false // weighed part by part in allowedBy
		}
		if matchCommand(pat, collapse(c.raw)) {
			return true
		}
		for _, part := range c.cmd.parts {
			if matchCommand(pat, part) || matchCommand(pat, stripWrappers(part)) {
				return true
			}
		}
		return false
	case plugins.ToolWebFetch:
		host := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(pat, "domain:")))
		if sub, ok := strings.CutPrefix(host, "*."); ok {
			return strings.HasSuffix(c.host, "."+sub)
		}
		return c.host != "" && c.host == host
	case plugins.ToolTask:
		return matchCommand(strings.ToLower(pat), c.agent)
	}
	if len(c.paths) == 0 {
		return false
	}
	glob := absGlob(pat, p.root, p.home)
	for _, pth := range c.paths {
		if matchPath(glob, pth) {
			if !forAllow {
				return true
			}
		} else if forAllow {
			// An allow rule must hold for the path and its real path:
			// a link inside an allowed tree to a file outside is not
			// allowed by it.
			return false
		}
	}
	return forAllow
}
