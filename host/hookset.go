package host

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/host/supervisor"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/internal/trust"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// ProjectEnv names the project directory in a built-in plugin's
// environment, so that a built-in loads the same configuration as its host.
const ProjectEnv = "WEAVE_PROJECT_DIR"

// BuiltinHookConfig maps the configuration onto the built-in hooks'
// settings. The host and the built-in plugin process both call it, so that
// they agree on what each built-in is.
func BuiltinHookConfig(project string, cfg *config.Config) hooks.BuiltinConfig {
	return hooks.BuiltinConfig{
		ProjectDir:          project,
		WorkContinuation:    cfg.WorkContinuation.Enabled,
		MaxNudges:           cfg.WorkContinuation.MaxStaleNudges,
		ContextWarnRatio:    cfg.ContextWindow.WarnRatio,
		ContextCompactRatio: cfg.ContextWindow.CompactRatio,
		Timeout:             cfg.Hook.Timeout,
		InstructionFiles:    cfg.Instructions.Files,
	}
}

// buildHooks assembles every hook of a project in pipeline order's raw
// material: the built-in hooks, each served as a plugin through sup (see
// builtinEntries; started on first use); the command hooks of config `hooks:`;
// and the hook plugins sup knows from .weave/plugins/, the user's plugin
// directory and config `plugins:`. A plugin that cannot start or say what it
// is may be a guard: when strict (something is about to run), that is an
// error that names it, says why and how to go on without it, unless config
// marks it optional; otherwise it is left out with an error in the log.
func buildHooks(ctx context.Context, project string, cfg *config.Config, sup *supervisor.Supervisor, procs *proc.Set, strict bool, logger *slog.Logger) ([]hooks.Registered, error) {
	var out []hooks.Registered
	for _, r := range hooks.BuiltinHooks(BuiltinHookConfig(project, cfg)) {
		r.Hook = endsQuietly{Hook: sup.Hook(r.Info.Name), running: func() bool { return sup.Running(r.Info.Name) }}
		r.Source = "builtin"
		out = append(out, r)
	}

	specs, err := commandSpecs(cfg)
	if err != nil {
		return nil, err
	}
	cmds, err := hooks.CommandHooks(specs, hooks.CommandOptions{ProjectDir: project, Procs: procs, Hide: cfg.CredentialEnv(),
		Logf: func(format string, args ...any) { logger.Info(fmt.Sprintf(format, args...)) }})
	if err != nil {
		return nil, err
	}
	out = append(out, cmds...)

	for _, e := range sup.Entries() {
		if e.Source == "builtin" || (e.Kind != "" && e.Kind != plugins.KindHook) {
			continue
		}
		m, err := sup.Manifest(ctx, e.Name)
		if err != nil {
			if strict && !e.Optional {
				return nil, brokenPluginError(e, err)
			}
			logger.Error("plugin left out: it did not describe itself", "plugin", e.Name, "err", err, "optional", e.Optional)
			continue
		}
		if m.Kind != plugins.KindHook {
			continue
		}
		out = append(out, hooks.Registered{
			Hook:    sup.Hook(e.Name),
			Info:    m.Info,
			Timeout: cfg.Hook.Timeout,
			Source:  "plugin",
			Detail:  e.Path,
		})
	}
	return out, nil
}

// brokenPluginError says that a plugin which may be a guard cannot start,
// and how to go on: fix it, remove it, or mark it optional.
func brokenPluginError(e supervisor.Entry, err error) error {
	where := "remove it from config plugins:"
	if e.Source != "config" {
		where = "remove " + e.Path
	}
	return fmt.Errorf("%w\nnothing runs without it, because it may be a guard: fix it, %s, or let runs go on without it in .weave/config.yaml:\n  plugins:\n    - name: %s\n      optional: true",
		err, where, e.Name)
}

// commandSpecs turns config `hooks:` (Claude Code's shape) into command hook
// specs, through the same reading a pasted settings file gets.
func commandSpecs(cfg *config.Config) ([]hooks.CommandSpec, error) {
	return claudeHooks(cfg).Specs()
}

// UnrunHooks lists, one short line each, what config `hooks:` names that
// Weave accepts but does not run (events it does not fire, handler types
// it does not run), for a warning.
func UnrunHooks(cfg *config.Config) []string { return claudeHooks(cfg).Unrun() }

func claudeHooks(cfg *config.Config) hooks.ClaudeHooks {
	ch := hooks.ClaudeHooks{}
	for event, matchers := range cfg.Hooks {
		for _, m := range matchers {
			g := hooks.ClaudeMatcherGroup{Matcher: m.Matcher}
			for _, h := range m.Hooks {
				g.Hooks = append(g.Hooks, hooks.ClaudeHookEntry{Type: h.Type, Command: h.Command, URL: h.URL, Headers: h.Headers,
					AllowedEnvVars: h.AllowedEnvVars, Timeout: float64(h.Timeout), If: h.If, Async: h.Async, Once: h.Once,
					StatusMessage: h.StatusMessage})
			}
			ch[event] = append(ch[event], g)
		}
	}
	return ch
}

// newProjectSupervisor returns a supervisor that knows the project's
// plugins: the executables in .weave/plugins/ and the user's plugin
// directory, config `plugins:` entries (which win over a discovered plugin of
// the same name), and the built-in hooks and agents. Nothing is started
// until it is used.
func newProjectSupervisor(project string, cfg *config.Config, logger *slog.Logger) (*supervisor.Supervisor, error) {
	dirs := []supervisor.Dir{{Path: layout.NewProject(project).Plugins(), Source: "project"}}
	for _, d := range layout.UserFrom(nil).Plugins() {
		dirs = append(dirs, supervisor.Dir{Path: d, Source: "user"})
	}
	found, err := supervisor.Discover(dirs...)
	if err != nil {
		return nil, err
	}
	var configured []supervisor.Entry
	for _, p := range cfg.Plugins {
		if p.Path == "" {
			// Only marks the discovered plugin of that name optional.
			if i := slices.IndexFunc(found, func(e supervisor.Entry) bool { return e.Name == p.Name }); i >= 0 {
				found[i].Optional = true
			} else {
				logger.Warn("config plugins: names a plugin that is not installed", "plugin", p.Name)
			}
			continue
		}
		configured = append(configured, supervisor.Entry{Name: p.Name, Path: p.Path, Args: p.Args, Env: p.Env, Dir: project, Source: "config", Optional: p.Optional})
	}
	entries := supervisor.Merge(found, configured)
	builtins, err := builtinEntries(project, cfg)
	if err != nil {
		return nil, err
	}
	return supervisor.New(supervisor.Options{
		// The plugin environment policy: see package proc.
		Environ:      PluginEnviron(),
		Logger:       logger,
		StartTimeout: cfg.Plugin.StartTimeout,
		MaxRestarts:  cfg.Plugin.MaxRestarts,
	}, append(entries, builtins...)...)
}

// builtinEntries are the built-in hooks and the project's roles (the eight,
// the categories' Shuttles and the custom agents, less the disabled ones)
// as plugins served by weave itself, each run in the project with its path
// in the environment.
func builtinEntries(project string, cfg *config.Config) ([]supervisor.Entry, error) {
	roster, err := tools.Roster(cfg)
	if err != nil {
		return nil, err
	}
	// Each built-in reads the config again: it is told which config the
	// host started with, and refuses another (package trust).
	digest := ""
	if project != "" {
		snap, err := trust.Take(project)
		if err != nil {
			return nil, err
		}
		digest = snap.Digest()
	}
	var out []supervisor.Entry
	add := func(id string, kind plugins.Kind) error {
		entry, err := supervisor.BuiltinEntry(id)
		if err != nil {
			return err
		}
		entry.Kind = kind
		entry.Dir = project
		entry.Env = map[string]string{ProjectEnv: project}
		if digest != "" {
			entry.Env[trust.DigestEnv] = digest
		}
		out = append(out, entry)
		return nil
	}
	for _, r := range hooks.BuiltinHooks(BuiltinHookConfig(project, cfg)) {
		if err := add(r.Info.Name, plugins.KindHook); err != nil {
			return nil, err
		}
	}
	for _, r := range roster {
		if err := add(agents.AgentID(r.Name), plugins.KindAgent); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PluginEnviron is the base environment of every plugin: the host's, as the
// plugin policy of package proc narrows it (no secrets, little else).
func PluginEnviron() []string { return proc.Env(proc.Plugin, proc.EnvOptions{}) }

// BuiltinAgents returns the project's roles as agent plugins, by plugin
// ID, configured by cfg: each role offers its model exactly its effective
// row (the gate's, after agents.<name>.tools), and takes agents.<name>.model,
// .temperature and .prompt_append. Tapestry carries out plan tasks; Pattern
// validates the plans it writes in project before it reports done; a
// category's Shuttle carries out the tasks of its category; a custom agent
// thinks with its own prompt.
func BuiltinAgents(project string, cfg *config.Config) (map[string]plugins.Agent, error) {
	gate, err := tools.NewGate(cfg, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]plugins.Agent{}
	for _, row := range gate.Rows() {
		id := agents.AgentID(row.Role.Name)
		ac := cfg.Agents[row.Role.Name]
		a := agents.NewModelAgent(row.Role, agents.Overrides{
			Tools: row.Tools, Model: ac.Model, Temperature: ac.Temperature, PromptAppend: ac.PromptAppend,
		})
		switch {
		case row.Role.Name == agents.Tapestry:
			// Tapestry runs runbook tasks itself and thinks for the rest.
			out[id] = agents.NewModelTapestry(a)
		case row.Role.Name == agents.Pattern:
			out[id] = agents.PatternAgent{Model: a, Project: project}
		case row.Role.Category != "":
			out[id] = agents.ShuttleAgent{Model: a}
		default:
			out[id] = a
		}
	}
	return out, nil
}

// endsQuietly is a built-in hook served by a plugin process. The built-in
// hooks use session.end only to forget what earlier calls of the session
// taught them (see hooks.BuiltinHooks), and that lives in the process: a
// process that is not running holds nothing to forget, so session.end is not
// worth starting one for.
type endsQuietly struct {
	plugins.Hook
	running func() bool
}

func (h endsQuietly) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Name == plugins.EventSessionEnd && !h.running() {
		return plugins.Decision{Action: plugins.Allow}, nil
	}
	return h.Hook.Handle(ctx, ev)
}

// warmsForRun reports whether a start-work run should start the built-in
// hook r ahead of its first call: it handles an event every run fires
// (session.end aside, see endsQuietly), or a tool event for every tool. A
// hook that handles only some tools starts on the first call it handles.
func warmsForRun(r hooks.Registered) bool {
	for _, ev := range r.Info.Events {
		if ev == plugins.EventSessionEnd || !run.IsRunEvent(ev) {
			continue
		}
		if _, narrowed := r.Info.Tools[ev]; !narrowed {
			return true
		}
	}
	return false
}

// categoryRoute gives a task tagged [category: x] to shuttle-x when the
// project configures the category (and has not disabled its Shuttle); any
// other task stays with Tapestry.
func (h *Host) categoryRoute(t plans.Task) (string, plugins.Agent, bool) {
	if t.Category == "" {
		return "", nil, false
	}
	name := agents.CategoryAgent(t.Category)
	if _, ok := h.gate.Role(name); !ok {
		return "", nil, false
	}
	return name, h.sup.Agent(agents.AgentID(name)), true
}
