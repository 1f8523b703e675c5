package host

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/instructions"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/plugins"
)

// guidance is what the host tells every agent from files: the
// instruction files of the user and the project root, the skills, and
// warnings for the person about files it could not use. It is read once,
// when the host opens.
type guidance struct {
	files    []instructions.File
	skills   []instructions.Skill
	warnings []string
}

// Sources are where project project's instructions, skills and commands
// are read with cfg (instructions.files): the project, the user's Weave
// directory and ~/.claude.
func Sources(project string, cfg *config.Config) instructions.Sources {
	if cfg == nil {
		cfg = config.Default()
	}
	home, _ := os.UserHomeDir()
	return instructions.Sources{Project: project, UserDir: layout.UserFrom(nil).Config, Home: home, Files: cfg.Instructions.Files}
}

func loadGuidance(project string, cfg *config.Config) guidance {
	src := Sources(project, cfg)
	var g guidance
	var warn []string
	g.files, g.warnings = src.Instructions()
	g.skills, warn = src.Skills()
	g.warnings = append(g.warnings, warn...)
	for _, name := range sortedCategories(cfg) {
		for _, sk := range cfg.Categories[name].Skills {
			if _, ok := instructions.Lookup(g.skills, sk); !ok {
				g.warnings = append(g.warnings, fmt.Sprintf("categories.%s.skills: no skill named %q (have %s)", name, sk, haveSkills(g.skills)))
			}
		}
	}
	return g
}

func sortedCategories(cfg *config.Config) []string {
	names := make([]string, 0, len(cfg.Categories))
	for n := range cfg.Categories {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func haveSkills(skills []instructions.Skill) string {
	if len(skills) == 0 {
		return "none"
	}
	return strings.Join(instructions.Names(skills), ", ")
}

// Warnings are what the person should know about the files the host read
// for the agents (a skill skipped, an instruction file not read), each
// naming its file.
func (h *Host) Warnings() []string { return slices.Clone(h.guide.warnings) }

// guideKey carries, in a model call's context, the guidance of the code the
// call works on when that is not the project's (treeGuide).
type guideKey struct{}

// treeGuide reads what the code in dir tells the agents, as the host reads
// its project's when it opens: dir's instruction files and skills (only
// files whose real path stays inside dir), the user's own beside them, and
// the names this host's config gives (instructions.files). A worker's task
// works on a coordinator's code in dir: its model calls carry this
// guidance instead of the worker project's. It is text for the model only;
// the config, hooks, permission rules and trust stay the host's.
func (h *Host) treeGuide(dir string) run.TreeGuide {
	g := loadGuidance(dir, h.cfg)
	return run.TreeGuide{
		Carry:    func(ctx context.Context) context.Context { return context.WithValue(ctx, guideKey{}, &g) },
		Skills:   g.skills,
		Warnings: g.warnings,
	}
}

// systemFor is what the host adds to agent's system prompt: the
// instructions, the skills' list when its row has the skill tool, and the
// skills its category loads, of the project or, when ctx carries one
// (treeGuide), of the code the call works on. It is the same for every
// call of the agent on that code, so a provider's prompt cache keeps it.
func (h *Host) systemFor(ctx context.Context, agent string) string {
	guide := &h.guide
	if g, ok := ctx.Value(guideKey{}).(*guidance); ok {
		guide = g
	}
	var parts []string
	if s := instructions.Render(guide.files); s != "" {
		parts = append(parts, s)
	}
	role, ok := h.gate.Role(agent)
	if !ok {
		return strings.Join(parts, "\n")
	}
	if slices.Contains(h.gate.Allowed(tools.Caller{Agent: role.Name}), plugins.ToolSkill) {
		if s := instructions.RenderSkills(guide.skills); s != "" {
			parts = append(parts, s)
		}
	}
	if role.Category != "" {
		for _, name := range h.cfg.Categories[role.Category].Skills {
			sk, found := instructions.Lookup(guide.skills, name)
			if !found {
				continue
			}
			body, err := sk.Body()
			if err != nil {
				h.logger.Warn("category skill not loaded", "category", role.Category, "skill", name, "err", err)
				continue
			}
			parts = append(parts, fmt.Sprintf("# Skill loaded for the %s category\n\n%s", role.Category, body))
		}
	}
	return strings.Join(parts, "\n")
}

// Narrow limits the tool calls of session (and of the agents it delegates
// to) to allowed until restore is called: a command file's allowed-tools.
// It never widens a role; see tools.Tools.Narrow. A host opened without its
// tools narrows nothing.
func (h *Host) Narrow(session, by string, allowed []string) (restore func()) {
	if h.tools == nil {
		return func() {}
	}
	return h.tools.Narrow(session, by, allowed)
}

// UseModel has the model calls of session use model until restore is
// called: a command file's model.
func (h *Host) UseModel(session, model string) (restore func()) {
	if h.model == nil || model == "" {
		return func() {}
	}
	return h.model.UseModel(session, model)
}
