package tools

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/realpath"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// The host-owned files: the rules a run obeys and the record it keeps. The
// write and edit tools of every role refuse them, whatever the role's row
// and write scope allow; the bash sandbox (sandbox.go) makes them
// read-only there (and the tick door puts back a plan's checkboxes that a
// bash call changed during a run). The one list, matched on the real path relative
// to the project root, case-insensitively (as macOS's file system
// compares names):
//
//	.weave/config.*            config         the project's config, every layer and format
//	.weave/state.json          work state     the run's record
//	.weave/weave.lock          lock           who drives the project
//	.weave/sessions/           sessions       the transcripts
//	.weave/run/                run records    the process groups a host started
//	.weave/plugins/            plugins        code the host runs
//	.weave/cache/              cache          what the host trusts it computed
//	.weave/logs/               logs           the host's and the tasks' logs
//	.claude/settings*.json     Claude settings hooks and permissions Claude Code reads
//	.weave/commands/,          command files  slash commands: prompts, allowed-tools, model
//	.claude/commands/
//	.mcp.json                  MCP servers    servers the host starts
//	a hook script              hook script    a file a configured command hook names
//
// A plan under .weave/plans/ is not host-owned, except its checkbox bytes:
// a write or edit may create a plan and change its text (Pattern writes
// plans), but one that would tick or untick a task, or add a task already
// ticked, is refused whole, so that the file stays exactly as it was. Ticks
// go through plan_check, the tick door (tickdoor.go). Refusing, rather than
// writing the text and keeping the old marks, tells the model plainly that
// its tick did not happen.

// hostOwnedDirs are the directories of .weave/ the host alone writes, with
// their rule.
var hostOwnedDirs = []struct{ dir, rule string }{
	{"sessions", "sessions"},
	{"run", "run records"},
	{"plugins", "plugins"},
	{"cache", "cache"},
	{"logs", "logs"},
	{"commands", "command files"},
}

// hostOwnedRule is the rule under which the file at rel (slash-separated,
// relative to the project root) is host-owned, "" when it is not. scripts
// are the hook scripts the config names, in the same form.
func hostOwnedRule(rel string, scripts []string) string {
	low := strings.ToLower(path.Clean(rel))
	weave := strings.ToLower(layout.DirName) + "/"
	if rest, ok := strings.CutPrefix(low, weave); ok {
		switch {
		case !strings.Contains(rest, "/") && strings.HasPrefix(rest, "config."):
			return "config"
		case rest == strings.ToLower(layout.StateFile):
			return "work state"
		case rest == strings.ToLower(layout.LockFile):
			return "lock"
		}
		for _, d := range hostOwnedDirs {
			if rest == d.dir || strings.HasPrefix(rest, d.dir+"/") {
				return d.rule
			}
		}
	}
	if rest, ok := strings.CutPrefix(low, ".claude/"); ok && !strings.Contains(rest, "/") &&
		strings.HasPrefix(rest, "settings") && strings.HasSuffix(rest, ".json") {
		return "Claude settings"
	}
	if low == ".claude/commands" || strings.HasPrefix(low, ".claude/commands/") {
		return "command files"
	}
	if low == ".mcp.json" {
		return "MCP servers"
	}
	for _, s := range scripts {
		if strings.EqualFold(s, rel) {
			return "hook script"
		}
	}
	return ""
}

// isPlanFile reports whether rel is a plan file: a .md file directly in
// .weave/plans/.
func isPlanFile(rel string) bool {
	dir, file := path.Split(path.Clean(rel))
	return strings.EqualFold(dir, layout.DirName+"/plans/") && strings.EqualFold(path.Ext(file), ".md")
}

// hookScripts lists the files inside the project that the config's command
// hooks name: each word of a hook's command that, taken from the project
// root ($CLAUDE_PROJECT_DIR and $WEAVE_PROJECT_DIR standing for it), is a
// path inside the project. Relative to root, slash-separated.
func hookScripts(root string, cfg *config.Config) []string {
	var out []string
	for _, matchers := range cfg.Hooks {
		for _, m := range matchers {
			for _, h := range m.Hooks {
				for _, w := range strings.Fields(h.Command) {
					w = strings.Trim(w, `"'`)
					for _, v := range []string{"${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR", "${WEAVE_PROJECT_DIR}", "$WEAVE_PROJECT_DIR"} {
						w = strings.ReplaceAll(w, v, root)
					}
					if !strings.ContainsRune(w, '/') {
						continue
					}
					real, err := realpath.Resolve(root, filepath.FromSlash(w))
					if err != nil || !realpath.Within(root, real) || real == root {
						continue
					}
					out = append(out, projectRel(root, real))
				}
			}
		}
	}
	return out
}

// ownedPath is the refusal of a write or edit of the file at real, asked
// for as asked (the tool's path argument), when it is host-owned, "" when
// it is not. Both names are checked: the real one, and the one asked for,
// which is how weave itself reaches the file when a directory on the way
// is a link.
func (t *Tools) ownedPath(asked, real string) string {
	scripts := hookScripts(t.root, t.cfg)
	rel := projectRel(t.root, real)
	if rule := hostOwnedRule(rel, scripts); rule != "" {
		return fmt.Sprintf("refused: %s is host-owned (%s)", rel, rule)
	}
	lex := filepath.Clean(filepath.FromSlash(asked))
	if filepath.IsAbs(lex) {
		r, err := filepath.Rel(t.root, lex)
		if err != nil {
			return ""
		}
		lex = r
	}
	if lex = filepath.ToSlash(lex); lex != rel && !strings.HasPrefix(lex, "../") {
		if rule := hostOwnedRule(lex, scripts); rule != "" {
			return fmt.Sprintf("refused: %s is host-owned (%s)", lex, rule)
		}
	}
	return ""
}

// ownedMarks is the refusal of a write or edit that would leave the plan
// file at real holding next, where it held prev (prevOK false: the file
// is new), when that changes a checkbox; "" when it changes none, or the
// file is no plan.
func (t *Tools) ownedMarks(real string, prev []byte, prevOK bool, next []byte) string {
	rel := projectRel(t.root, real)
	if !isPlanFile(rel) {
		return ""
	}
	var before *plans.Plan
	if prevOK {
		before = plans.Parse(prev)
	}
	changed := plans.MarkChanges(before, plans.Parse(next))
	if len(changed) == 0 {
		return ""
	}
	labels := make([]string, len(changed))
	for i, c := range changed {
		labels[i] = "task " + c.Label()
	}
	return fmt.Sprintf("refused: %s: the write changes the checkbox of %s; checkbox bytes are host-owned (plan ticks); ticks go through plan_check",
		rel, strings.Join(labels, ", "))
}

// refused is the result of a write the host-owned rule refused.
func refused(msg string) (plugins.ToolResult, error) {
	return plugins.ToolResult{Output: msg, IsError: true, Denied: true, Reason: msg}, nil
}
