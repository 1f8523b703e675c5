package tools

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/weavehq/weave/plugins"
)

// narrowing is what a turn's calls are narrowed to: a command file's
// allowed-tools.
type narrowing struct {
	// by names what narrowed the turn, e.g. "/commit".
	by    string
	rules []toolRule
}

// toolRule is one allowed-tools entry: a tool, and for Bash(...) the
// command, for a path tool the path pattern, it is limited to.
type toolRule struct {
	tool string
	// prefix, exact: Bash(git status:*) and Bash(make test).
	prefix, exact string
	// path matches the path argument: Read(src/**).
	path *regexp.Regexp
}

// Narrow limits session's tool calls, and those of the agents it delegates
// to, to allowed until restore is called: names in Claude Code's spelling
// (Bash, Read, Bash(git status:*), Edit(src/**)) or Weave's (bash, read).
// It only takes away: the gate's row still decides first, so a tool in
// allowed that the role lacks stays refused. by names the narrowing in a
// refusal.
func (t *Tools) Narrow(session, by string, allowed []string) (restore func()) {
	n := narrowing{by: by}
	for _, a := range allowed {
		n.rules = append(n.rules, parseToolRule(a))
	}
	t.mu.Lock()
	if t.narrowed == nil {
		t.narrowed = map[string]narrowing{}
	}
	prev, had := t.narrowed[session]
	t.narrowed[session] = n
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if had {
			t.narrowed[session] = prev
		} else {
			delete(t.narrowed, session)
		}
	}
}

// parseToolRule reads one allowed-tools entry.
func parseToolRule(s string) toolRule {
	name, pattern, hasPattern := strings.Cut(strings.TrimSpace(s), "(")
	r := toolRule{tool: toolName(name)}
	if !hasPattern {
		return r
	}
	pattern = strings.TrimSuffix(pattern, ")")
	switch {
	case r.tool == plugins.ToolBash:
		if p, ok := strings.CutSuffix(pattern, ":*"); ok {
			r.prefix = p
		} else {
			r.exact = pattern
		}
	case pattern != "" && pattern != "*" && pattern != "**":
		r.path = globRE(pattern)
	}
	return r
}

// toolName is a tool's Weave name from Claude Code's or Weave's.
func toolName(name string) string {
	name = strings.TrimSpace(name)
	for _, d := range plugins.Tools() {
		if strings.EqualFold(d.Claude, name) || d.Name == name {
			return d.Name
		}
	}
	return name
}

// globRE turns a path pattern (** crosses directories, * and ? do not)
// into a regular expression.
func globRE(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch {
		case strings.HasPrefix(p[i:], "**"):
			b.WriteString(".*")
			i++
		case p[i] == '*':
			b.WriteString("[^/]*")
		case p[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// narrowedOut returns why a call falls outside its session's narrowing,
// "" when it does not (or there is none). A delegated agent's session
// (<session>.<agent>-...) is narrowed as its parent is.
func (t *Tools) narrowedOut(session, tool string, args map[string]any) string {
	t.mu.Lock()
	var n narrowing
	found := false
	for s := session; ; {
		if n, found = t.narrowed[s]; found {
			break
		}
		i := strings.LastIndexByte(s, '.')
		if i < 0 {
			break
		}
		s = s[:i]
	}
	t.mu.Unlock()
	if !found {
		return ""
	}
	for _, r := range n.rules {
		if r.tool != tool {
			continue
		}
		if r.allows(args) {
			return ""
		}
	}
	return fmt.Sprintf("denied by the allowed-tools of %s (it does not allow this %s call)", n.by, tool)
}

func (r toolRule) allows(args map[string]any) bool {
	switch {
	case r.prefix != "" || r.exact != "":
		cmd, _ := args[argCommand].(string)
		cmd = strings.TrimSpace(cmd)
		if r.exact != "" {
			return cmd == r.exact
		}
		// A prefix rule allows the command and its arguments, nothing
		// chained after it.
		if strings.ContainsAny(cmd, ";&|`$<>\n") {
			return false
		}
		return cmd == r.prefix || strings.HasPrefix(cmd, r.prefix+" ")
	case r.path != nil:
		p, ok := plugins.ToolPath(args)
		if !ok {
			return false
		}
		return r.path.MatchString(filepath.ToSlash(filepath.Clean(p)))
	}
	return true
}
