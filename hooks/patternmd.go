package hooks

import (
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/realpath"

	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weavehq/weave/plugins"
)

// PatternMDOnlyID names the pattern-md-only guard.
const PatternMDOnlyID = "weave.pattern-md-only"

// PatternMDOnly keeps the planning agent to writing markdown under .weave/:
// a write or edit by that agent must land, after resolving "..", symlinks
// (of the file and of every directory on the way) and absolute paths, on a
// file ending in lower-case ".md" inside the project's .weave directory.
type PatternMDOnly struct {
	agent   string
	project string
}

// NewPatternMDOnly returns the guard for agent ("" means "pattern"); project
// is used when an event has no cwd.
func NewPatternMDOnly(agent, project string) *PatternMDOnly {
	if agent == "" {
		agent = "pattern"
	}
	return &PatternMDOnly{agent: agent, project: project}
}

func (h *PatternMDOnly) info() plugins.Info {
	info := builtinInfo(PatternMDOnlyID, PriorityGuard, plugins.EventToolExecuteBefore)
	info.Tools = map[string][]string{plugins.EventToolExecuteBefore: patternTools}
	return info
}

func (h *PatternMDOnly) registered() Registered { return builtinRegistered(h, h.info(), FailClosed) }

// Info describes the hook.
func (h *PatternMDOnly) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// patternTools are the tools that change files, the ones the guard judges.
var patternTools = []string{plugins.ToolWrite, plugins.ToolEdit}

// Handle checks one tool call.
func (h *PatternMDOnly) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	if !strings.EqualFold(ev.Agent, h.agent) || !slices.Contains(patternTools, ev.Tool) {
		return allow, nil
	}
	project, err := projectDir(ev, h.project)
	if err != nil {
		return plugins.Decision{}, err
	}
	p, ok := plugins.ToolPath(ev.Args)
	if !ok {
		return block(fmt.Sprintf("%s may only %s .md files under .weave/, and this call names no path", h.agent, ev.Tool)), nil
	}
	root, err := realpath.Resolve("", project)
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("resolve project directory: %w", err)
	}
	real, err := realpath.Resolve(project, p)
	if err != nil {
		return block(fmt.Sprintf("%s may only %s .md files under .weave/; cannot resolve %s: %v", h.agent, ev.Tool, p, err)), nil
	}
	weave := layout.NewProject(root).Dir()
	if !realpath.Within(weave, real) || real == weave || !strings.HasSuffix(filepath.Base(real), ".md") || filepath.Base(real) == ".md" {
		shown := real
		if rel, err := filepath.Rel(root, real); err == nil && !strings.HasPrefix(rel, "..") {
			shown = rel
		}
		return block(fmt.Sprintf("%s may only %s .md files under .weave/ (lower-case .md); %s resolves to %s", h.agent, ev.Tool, p, shown)), nil
	}
	return allow, nil
}

var _ plugins.Hook = (*PatternMDOnly)(nil)
