package hooks

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/weavehq/weave/plugins"
)

// ifRule is a hook's `if`: a permission rule in Claude Code's syntax,
// Tool or Tool(pattern), that narrows a tool hook to the calls it matches.
// The pattern is matched against the call's command (Bash), file path
// (Read, Edit, Write; as given and made absolute), URL (WebFetch) or first
// string argument, with * matching any run of characters; a trailing ":*"
// is a prefix match, as in Claude Code's older rules. On events that carry
// no tool call the rule does not narrow anything.
type ifRule struct {
	tool    string
	pattern *regexp.Regexp // nil: every call of tool
}

var ifSyntax = regexp.MustCompile(`^\s*([A-Za-z0-9_.*-]+)\s*(?:\((.*)\))?\s*$`)

func parseIf(s string) (*ifRule, error) {
	m := ifSyntax.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("want a rule like Bash(git push*) or Edit(*.go)")
	}
	r := &ifRule{tool: m[1]}
	if p := strings.TrimSpace(m[2]); p != "" && p != "*" {
		if strings.HasSuffix(p, ":*") {
			p = strings.TrimSuffix(p, ":*") + "*"
		}
		parts := strings.Split(p, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		r.pattern = regexp.MustCompile("^(?s:" + strings.Join(parts, ".*") + ")$")
	}
	return r, nil
}

// matches reports whether the rule takes ev; a nil rule takes everything.
func (r *ifRule) matches(ev plugins.Event) bool {
	if r == nil || ev.Tool == "" {
		return true
	}
	name := ClaudeToolName(ev.Tool)
	if r.tool != name && r.tool != "*" {
		return false
	}
	if r.pattern == nil {
		return true
	}
	for _, s := range ifSubjects(ev) {
		if r.pattern.MatchString(s) {
			return true
		}
	}
	return false
}

// ifSubjects are the strings of a call a rule's pattern is matched against.
func ifSubjects(ev plugins.Event) []string {
	str := func(k string) string { s, _ := ev.Args[k].(string); return s }
	for _, k := range []string{"command", "url"} {
		if s := str(k); s != "" {
			return []string{s}
		}
	}
	if p := str("path"); p != "" {
		out := []string{p}
		if !filepath.IsAbs(p) && ev.Cwd != "" {
			out = append(out, filepath.Join(ev.Cwd, p))
		}
		return out
	}
	for _, v := range ev.Args {
		if s, ok := v.(string); ok {
			return []string{s}
		}
	}
	return nil
}
