package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/busface"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/internal/trust"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/pluginhost"
)

// otherWeaveEnv are the WEAVE_* variables weave reads that are not config
// keys.
var otherWeaveEnv = []string{host.ProjectEnv, busface.URLEnv, busface.TokenEnv, plugins.EnvPluginName, pluginhost.EnvHostPID, weaveSrcEnv, trust.Env, trust.DigestEnv}

// globalOptions are the flags every command takes.
type globalOptions struct {
	// Dir is the project directory; empty means the nearest directory
	// upward from the working directory that holds .weave/.
	Dir string
	// Color is --color: auto, always or never.
	Color string
	// JQ is --jq: a jq expression applied to the command's --json output.
	JQ string
	// TrustNow is --trust (start-work, chat): trust the project config as
	// it is, for this run and the next.
	TrustNow bool

	// errOut is where the trust gate says it trusted a config.
	errOut io.Writer
	// trusted is the project config the gate let act, compared with the
	// files at the end of a run (see trust.go).
	trusted *trust.Snapshot
}

// projectWithModel finds the project and loads its config for a command
// (named by what, for the message) that cannot work without a model: a
// model that is not configured is said before any plugin starts.
func (g *globalOptions) projectWithModel(what string) (string, *config.Config, error) {
	project, err := g.project()
	if err != nil {
		return "", nil, err
	}
	cfg, _, err := g.loadConfig(project, nil)
	if err != nil {
		return "", nil, err
	}
	if err := model.OpenSet(cfg, os.Getenv).Route("").Err; err != nil {
		return "", nil, &exitError{code: exitFailed, err: fmt.Errorf("%s needs a model: %w", what, err)}
	}
	return project, cfg, nil
}

// project finds the project root the command works on.
func (g *globalOptions) project() (string, error) {
	if g.Dir != "" {
		if err := g.checkDir(); err != nil {
			return "", err
		}
		return host.FindProject(g.Dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find working directory: %w", err)
	}
	return host.FindProject(wd)
}

// checkDir fails when --dir names no directory, instead of looking above it.
func (g *globalOptions) checkDir() error {
	fi, err := os.Stat(g.Dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--dir %s: the directory does not exist", g.Dir)
	case err != nil:
		return fmt.Errorf("--dir %s: %w", g.Dir, err)
	case !fi.IsDir():
		return fmt.Errorf("--dir %s: not a directory", g.Dir)
	}
	return nil
}

// findPlan finds the plan called name in the project.
func (g *globalOptions) findPlan(name string) (string, *plans.Plan, error) {
	project, err := g.project()
	if err != nil {
		return "", nil, err
	}
	p, err := plans.Find(project, name)
	return project, p, err
}

// optionalProjectConfig loads the configuration of the project, or, outside
// any project, of the user and environment layers alone; the project's
// must be trusted.
func (g *globalOptions) optionalProjectConfig() (string, *config.Config, *config.Sources, error) {
	project, err := g.optionalProject()
	if err != nil {
		return "", nil, nil, err
	}
	cfg, src, err := g.loadConfig(project, nil)
	return project, cfg, src, err
}

// optionalProject is the project, or "" outside any project.
func (g *globalOptions) optionalProject() (string, error) {
	project, err := g.project()
	if errors.Is(err, host.ErrNoProject) {
		return "", nil
	}
	return project, err
}

// loadConfigUntrusted loads the layered configuration for project (which
// may be empty), with the flags of cmd that were set by the user applied
// last, without asking whether the project's config is trusted: for
// commands that only show it, and for the plugins a gated host starts.
// Everything that acts on a config loads it through g.loadConfig.
func loadConfigUntrusted(project string, flags map[string]any) (*config.Config, *config.Sources, error) {
	return config.Load(config.Options{ProjectDir: project, Environ: os.Environ(), Flags: flags})
}

// flagOverrides turns the flags a user set into config overrides, by the
// config key each flag stands for.
func flagOverrides(fs *pflag.FlagSet, keys map[string]string) map[string]any {
	out := map[string]any{}
	for flag, key := range keys {
		f := fs.Lookup(flag)
		if f == nil || !f.Changed {
			continue
		}
		out[key] = f.Value.String()
	}
	return out
}

func newRootCmd(ctx context.Context, s *Streams) *cobra.Command {
	g := &globalOptions{errOut: s.ErrOut}
	root := &cobra.Command{
		Use:   "weave",
		Short: "Run markdown plans with AI coding agents, resumably",
		Long: `weave executes the checkbox tasks of a plan in .weave/plans/, ticks each as it
is verified, records its progress in .weave/state.json, and resumes where it
stopped after an interruption or a crash.`,
		Example: `  weave init
  weave start-work hello-weave
  weave status`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       readBuildInfo().Version,
	}
	root.SetVersionTemplate(versionTemplate())
	root.SetContext(ctx)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: fmt.Errorf("%w\nrun `%s --help` for usage", err, c.CommandPath())}
	})
	root.PersistentFlags().StringVar(&g.Dir, "dir", "", "project directory (default: nearest directory upward holding .weave/)")
	root.PersistentFlags().StringVar(&g.Color, "color", "auto", "colour the output: auto (a terminal, unless NO_COLOR is set), always or never")
	_ = root.RegisterFlagCompletionFunc("color", cobra.FixedCompletions(colorModes, cobra.ShellCompDirectiveNoFileComp))
	root.PersistentFlags().StringVar(&g.JQ, "jq", "", "filter the --json output with a jq expression (implies --json), as gh does")
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if g.JQ != "" {
			if err := s.filterJSON(c, g.JQ); err != nil {
				return err
			}
		}
		color, err := useColor(g.Color, s.Terminal, os.Getenv)
		s.Color = color
		if err != nil {
			return err
		}
		// A mistyped WEAVE_* variable would otherwise set nothing silently.
		if !c.Hidden && !strings.HasPrefix(c.Name(), "__") {
			pal := s.palette()
			for _, w := range config.UnknownEnv(os.Environ(), otherWeaveEnv...) {
				pal.warning(s.ErrOut, w)
			}
		}
		return nil
	}

	root.AddCommand(
		newCmdStartWork(g, s, nil),
		newCmdChat(g, s, nil),
		newCmdSessions(g, s),
		newCmdStatus(g, s, nil),
		newCmdReview(g, s, nil),
		newCmdPlan(g, s),
		newCmdInit(g, s, nil),
		newCmdConfig(g, s),
		newCmdHooks(g, s),
		newCmdPlugin(g, s),
		newCmdPlugins(g, s),
		newCmdMCP(g, s),
		newCmdAgents(g, s),
		newCmdBus(g, s),
		newCmdSendMessage(g, s),
		newCmdServePlugin(s),
		newCmdVersion(s),
		newCmdTask(g, s),
		newCmdDoctor(g, s),
		newCmdTrust(g, s),
		newCmdFakeModel(s),
		newCmdWorker(g, s),
		newCmdWorkers(g, s),
		newCmdBudget(g, s),
	)
	addCobraExamples(root)
	refuseUnknownSubcommands(root)
	plainFlagUsages(root)
	return root
}

// addCobraExamples gives the commands cobra adds (help, completion) the
// examples every other command has; cobra would add them only at Execute.
func addCobraExamples(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	examples := map[string]string{
		"help":       "  weave help start-work\n  weave help plan show",
		"completion": "  source <(weave completion bash)\n  weave completion zsh > \"${fpath[1]}/_weave\"",
		"bash":       "  source <(weave completion bash)\n  weave completion bash > ~/.local/share/bash-completion/completions/weave",
		"zsh":        "  weave completion zsh > \"${fpath[1]}/_weave\"",
		"fish":       "  weave completion fish > ~/.config/fish/completions/weave.fish",
		"powershell": "  weave completion powershell | Out-String | Invoke-Expression",
	}
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = examples["help"]
		case "completion":
			c.Example = examples["completion"]
			for _, sub := range c.Commands() {
				sub.Example = examples[sub.Name()]
			}
		}
	}
}

// runArgs executes the command line args and returns the exit code, printing
// any error to the error stream.
func runArgs(ctx context.Context, s *Streams, args []string) int {
	root := newRootCmd(ctx, s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if ferr := s.closeFilter(); ferr != nil && err == nil {
		err = &exitError{code: exitFailed, err: ferr}
	}
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	var ee *exitError
	if !errors.As(err, &ee) {
		// cobra's own errors (unknown command, bad arguments) are usage errors.
		if isCobraUsageError(err) {
			code = exitUsage
		}
	}
	if !errors.As(err, &ee) && errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// Ctrl-C: the command stopped where it was.
		fmt.Fprintln(s.ErrOut, "weave: interrupted")
		return code
	}
	if !errors.As(err, &ee) || ee.err != nil {
		fmt.Fprintf(s.ErrOut, "weave: %v\n", err)
	}
	return code
}

// isCobraUsageError recognises cobra's own complaints about the command
// line, which are usage errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag")
}

// argsBetween accepts between min and max positional arguments.
func argsBetween(min, max int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			if min == max {
				return usageErrorf("%s takes %d argument(s), got %d; see `%s --help`", c.CommandPath(), min, len(args), c.CommandPath())
			}
			return usageErrorf("%s takes %d to %d arguments, got %d; see `%s --help`", c.CommandPath(), min, max, len(args), c.CommandPath())
		}
		return nil
	}
}
