package permrule

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/weavehq/weave/plugins"
)

// Rule is one parsed permission rule.
type Rule struct {
	// Text is the rule as written, trimmed: what refusals name.
	Text string
	// Tool is the Weave tool the rule is about (bash, read, ...), or an MCP
	// tool name or server prefix (MCP set); "" for a Claude Code tool Weave
	// does not have, which matches nothing.
	Tool string
	// MCP marks an MCP rule: Tool is a whole tool name, or with Server set
	// a server's prefix mcp__<server>__.
	MCP    bool
	Server bool
	// Spec is what is in the parentheses; HasSpec says there were any.
	// An empty spec or "*" matches every call of the tool.
	Spec    string
	HasSpec bool
	// Foreign names a Claude Code tool Weave does not have.
	Foreign string
}

// ErrUnknownTool is wrapped by Parse's error for a rule naming a tool that
// is neither Weave's nor Claude Code's.
var ErrUnknownTool = errors.New("unknown tool")

// foreignTools are Claude Code tools Weave does not have: a rule naming one
// is accepted and matches nothing.
var foreignTools = []string{"NotebookEdit", "NotebookRead", "WebSearch", "LS", "KillShell", "BashOutput",
	"SlashCommand", "Skill", "ExitPlanMode", "AskUserQuestion", "ListMcpResourcesTool", "ReadMcpResourceTool"}

// aliases are Claude Code names that mean a Weave tool under another name.
var aliases = map[string]string{"MultiEdit": plugins.ToolEdit, "Agent": plugins.ToolTask}

const mcpPrefix = "mcp__"

// Parse reads one rule. Its error says what is wrong in words.
func Parse(text string) (Rule, error) {
	t := strings.TrimSpace(text)
	r := Rule{Text: t}
	if t == "" {
		return r, errors.New("empty rule; write a tool name, e.g. Bash or Bash(git status:*)")
	}
	name := t
	if i := strings.IndexByte(t, '('); i >= 0 {
		if !strings.HasSuffix(t, ")") {
			return r, fmt.Errorf("rule %q: missing the closing parenthesis", t)
		}
		name, r.Spec, r.HasSpec = strings.TrimSpace(t[:i]), strings.TrimSpace(t[i+1:len(t)-1]), true
	} else if strings.ContainsRune(t, ')') {
		return r, fmt.Errorf("rule %q: a closing parenthesis without an opening one", t)
	}
	if name == "" {
		return r, fmt.Errorf("rule %q: no tool name before the parenthesis", t)
	}
	if strings.HasPrefix(name, mcpPrefix) {
		return parseMCP(r, name)
	}
	r.Tool = weaveTool(name)
	if r.Tool == "" {
		if slices.Contains(foreignTools, name) {
			r.Foreign = name
			return r, nil
		}
		return r, fmt.Errorf("rule %q: %w %q; the tools are %s, mcp__<server>__<tool>", t, ErrUnknownTool, name, strings.Join(toolNames(), ", "))
	}
	if !r.HasSpec || r.Spec == "" || r.Spec == "*" {
		return r, nil
	}
	switch r.Tool {
	case plugins.ToolBash, plugins.ToolTask:
		if strings.Contains(r.Spec[:max(len(r.Spec)-2, 0)], ":*") {
			return r, fmt.Errorf("rule %q: :* may only end the pattern (prefix match); use * for a wildcard elsewhere", t)
		}
	case plugins.ToolRead, plugins.ToolWrite, plugins.ToolEdit, plugins.ToolGlob, plugins.ToolGrep:
		if strings.ContainsRune(r.Spec, 0) {
			return r, fmt.Errorf("rule %q: a path may not hold a NUL byte", t)
		}
	case plugins.ToolWebFetch:
		host, ok := strings.CutPrefix(r.Spec, "domain:")
		if !ok || strings.TrimSpace(host) == "" || strings.ContainsAny(host, "/ :") {
			return r, fmt.Errorf("rule %q: WebFetch takes domain:HOST, e.g. WebFetch(domain:example.com)", t)
		}
	default:
		return r, fmt.Errorf("rule %q: %s takes no pattern; write %s alone", t, name, name)
	}
	return r, nil
}

func parseMCP(r Rule, name string) (Rule, error) {
	r.MCP = true
	if r.HasSpec && r.Spec != "" && r.Spec != "*" {
		return r, fmt.Errorf("rule %q: an MCP tool takes no pattern; write %s alone", r.Text, name)
	}
	rest := strings.TrimPrefix(name, mcpPrefix)
	server, tool, hasTool := strings.Cut(rest, "__")
	if server == "" || strings.ContainsAny(rest, " \t*") && !(hasTool && tool == "*") {
		return r, fmt.Errorf("rule %q: want mcp__<server>, mcp__<server>__* or mcp__<server>__<tool>", r.Text)
	}
	if !hasTool || tool == "*" {
		r.Tool, r.Server = mcpPrefix+server+"__", true
		return r, nil
	}
	if tool == "" {
		return r, fmt.Errorf("rule %q: want mcp__<server>, mcp__<server>__* or mcp__<server>__<tool>", r.Text)
	}
	r.Tool = name
	return r, nil
}

// weaveTool maps a rule's tool name to Weave's tool: Claude Code's name
// (the host's table, plugins.Tools), an alias, or Weave's own name.
func weaveTool(name string) string {
	for _, d := range plugins.Tools() {
		if d.Claude == name || d.Name == name {
			return d.Name
		}
	}
	return aliases[name]
}

func toolNames() []string {
	var out []string
	for _, d := range plugins.Tools() {
		out = append(out, d.Claude)
	}
	return out
}

// Applies reports whether r is about calls of tool at all (its pattern
// aside). An Edit rule covers write too; a Read rule with a path covers
// glob and grep searching there.
func (r Rule) Applies(tool string) bool {
	switch {
	case r.Foreign != "":
		return false
	case r.MCP && r.Server:
		return strings.HasPrefix(tool, r.Tool)
	case r.Tool == tool:
		return true
	case r.Tool == plugins.ToolEdit && tool == plugins.ToolWrite:
		return true
	case r.Tool == plugins.ToolRead && r.pattern() != "" && (tool == plugins.ToolGlob || tool == plugins.ToolGrep):
		return true
	}
	return false
}

// pattern is the rule's pattern, "" when it matches every call.
func (r Rule) pattern() string {
	if !r.HasSpec || r.Spec == "*" {
		return ""
	}
	return r.Spec
}
