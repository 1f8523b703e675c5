package host

import (
	"context"
	"log/slog"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
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
	}
}

// BuildHooks assembles every hook of a project in pipeline order's raw
// material: the built-in hooks, each served as a plugin through sup (started
// on first use); the command hooks of config `hooks:`; and the hook plugins
// sup knows from .weave/plugins/, the user's plugin directory and config
// `plugins:`. A plugin that cannot say what it is is left out with an error
// in the log: one broken plugin must not stop the others.
func BuildHooks(ctx context.Context, project string, cfg *config.Config, sup *Supervisor, logger *slog.Logger) ([]hooks.Registered, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var out []hooks.Registered
	for _, r := range hooks.BuiltinHooks(BuiltinHookConfig(project, cfg)) {
		entry, err := BuiltinEntry(r.Info.Name)
		if err != nil {
			return nil, err
		}
		entry.Kind = plugins.KindHook
		entry.Dir = project
		entry.Env = map[string]string{ProjectEnv: project}
		if err := sup.Add(entry); err != nil {
			return nil, err
		}
		r.Hook = sup.Hook(r.Info.Name)
		r.Source = "builtin"
		out = append(out, r)
	}

	specs, err := commandSpecs(cfg)
	if err != nil {
		return nil, err
	}
	cmds, err := hooks.CommandHooks(specs, hooks.CommandOptions{ProjectDir: project})
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
			logger.Error("plugin left out: it did not describe itself", "plugin", e.Name, "err", err)
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

// commandSpecs turns config `hooks:` (Claude Code's shape) into command hook
// specs, through the same reading a pasted settings file gets.
func commandSpecs(cfg *config.Config) ([]hooks.CommandSpec, error) {
	ch := hooks.ClaudeHooks{}
	for event, matchers := range cfg.Hooks {
		for _, m := range matchers {
			g := hooks.ClaudeMatcherGroup{Matcher: m.Matcher}
			for _, h := range m.Hooks {
				g.Hooks = append(g.Hooks, hooks.ClaudeHookEntry{Type: h.Type, Command: h.Command, Timeout: float64(h.Timeout)})
			}
			ch[event] = append(ch[event], g)
		}
	}
	return ch.Specs()
}

// NewProjectSupervisor returns a supervisor that knows the project's plugins:
// the executables in .weave/plugins/ and the user's plugin directory, and
// config `plugins:` entries (which win over a discovered plugin of the same
// name). Nothing is started until it is used.
func NewProjectSupervisor(project string, cfg *config.Config, logger *slog.Logger) (*Supervisor, error) {
	userDir, err := UserPluginDir()
	if err != nil {
		userDir = ""
	}
	found, err := DiscoverPlugins(project, userDir)
	if err != nil {
		return nil, err
	}
	var configured []PluginEntry
	for _, p := range cfg.Plugins {
		configured = append(configured, PluginEntry{Name: p.Name, Path: p.Path, Args: p.Args, Env: p.Env, Dir: project, Source: "config"})
	}
	return NewSupervisor(SupervisorOptions{
		Logger:       logger,
		StartTimeout: cfg.Plugin.StartTimeout,
		MaxRestarts:  cfg.Plugin.MaxRestarts,
	}, MergePluginEntries(found, configured)...)
}

// AddBuiltinAgents makes the eight roles known to sup as built-in agent
// plugins (served by weave itself), started on first use.
func AddBuiltinAgents(sup *Supervisor, project string) error {
	for _, name := range agents.RoleNames() {
		entry, err := BuiltinEntry(agents.AgentID(name))
		if err != nil {
			return err
		}
		entry.Kind = plugins.KindAgent
		entry.Dir = project
		entry.Env = map[string]string{ProjectEnv: project}
		if err := sup.Add(entry); err != nil {
			return err
		}
	}
	return nil
}
