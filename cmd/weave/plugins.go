package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/supervisor"
	"github.com/weavehq/weave/plugins"
)

// Plugin statuses in `weave plugins list`.
const (
	pluginOK    = "ok"
	pluginError = "error"
)

// pluginListing is one row of `weave plugins list`.
type pluginListing struct {
	Name string `json:"name"`
	// InfoName is the name the plugin gives itself, when it differs from
	// Name (its file or config name): hooks run, are disabled and are
	// tested under that name.
	InfoName string       `json:"info_name,omitempty"`
	Kind     plugins.Kind `json:"kind,omitempty"`
	Version  string       `json:"version,omitempty"`
	// Events and Priority are a hook's; Role is an agent's.
	Events   []string `json:"events,omitempty"`
	Priority int      `json:"priority,omitempty"`
	Role     string   `json:"role,omitempty"`
	// Source is builtin, project (.weave/plugins/), user (the user's plugin
	// directory) or config (plugins: in the config).
	Source          string   `json:"source"`
	Path            string   `json:"path"`
	Args            []string `json:"args,omitempty"`
	ProtocolVersion int      `json:"protocol_version,omitempty"`
	// Status is ok when the plugin described itself as what it is listed
	// as, else error, with Error saying why.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

func newCmdPlugins(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "plugins",
		Short:   "List the plugins this project knows",
		Example: `  weave plugins list`,
	}
	cmd.AddCommand(newCmdPluginsList(g, s))
	return cmd
}

func newCmdPluginsList(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every plugin: built-ins, .weave/plugins/, the user's plugin directory and config plugins:",
		Example: `  weave plugins list
  weave plugins list --json`,
		Long: `List every plugin the project knows, sorted by name: the built-in hooks and
agents (served by weave itself), the executables in .weave/plugins/ and in the
user's plugin directory ($XDG_DATA_HOME/weave/plugins/), and the entries of
config ` + "`plugins:`" + ` (which win over a discovered plugin of the same name).

Each plugin is run once with the argument "describe" (no handshake) and shows
what it says it is: kind, version, events and priority for a hook, role for
an agent. STATUS is "ok", or "error" when the plugin could not describe
itself, says it is another kind than it is listed as, or speaks another
protocol version. The command exits 0 either way; a plugin in error is left
out of the hook pipeline with an error in the log.`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			list, err := listPlugins(c.Context(), g, s)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(list); err != nil {
					return err
				}
			} else {
				writePluginList(s.Out, list)
			}
			if n := countErrors(list); n > 0 {
				fmt.Fprintf(s.ErrOut, "%d plugin(s) could not describe themselves; see their status and error, or run one with the argument \"describe\"\n", n)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

// listPlugins describes every plugin of the project. Outside a project the
// built-ins and the user's plugins are still listed.
func listPlugins(ctx context.Context, g *globalOptions, s *Streams) ([]pluginListing, error) {
	project, err := g.project()
	if errors.Is(err, host.ErrNoProject) {
		project, err = "", nil
	}
	if err != nil {
		return nil, err
	}
	cfg, _, err := g.loadConfig(project, nil)
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewTextHandler(s.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := host.Open(ctx, project, cfg, host.WithLogger(logger))
	if err != nil {
		return nil, err
	}
	// Nothing is started here (describe runs outside the supervisor), but
	// Close is the one shutdown path all the same.
	defer h.Close(context.WithoutCancel(ctx))
	return describeAll(ctx, h.Supervisor().Entries(), host.PluginEnviron()), nil
}

// describeParallel bounds the describe processes run at once.
const describeParallel = 4

// describeAll runs `describe` on every entry, a few at a time, and returns
// the listings in the entries' order.
func describeAll(ctx context.Context, entries []supervisor.Entry, environ []string) []pluginListing {
	out := make([]pluginListing, len(entries))
	sem := make(chan struct{}, describeParallel)
	var wg sync.WaitGroup
	for i, e := range entries {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			m, err := supervisor.Describe(ctx, e, environ)
			out[i] = listing(e, m, err)
		}()
	}
	wg.Wait()
	return out
}

// listing turns an entry and what describe said into a row, checking the
// manifest against what the entry is listed as.
func listing(e supervisor.Entry, m plugins.Manifest, err error) pluginListing {
	l := pluginListing{Name: e.Name, Kind: e.Kind, Source: e.Source, Path: e.Path, Args: e.Args, Status: pluginOK}
	if err != nil {
		l.Status, l.Error = pluginError, err.Error()
		return l
	}
	l.Kind, l.Version, l.Events, l.Priority, l.Role = m.Kind, m.Version, m.Events, m.Priority, m.Role
	l.ProtocolVersion = m.ProtocolVersion
	var problems []string
	if e.Kind != "" && m.Kind != e.Kind {
		problems = append(problems, fmt.Sprintf("says it is a %q plugin, listed as %q", m.Kind, e.Kind))
	}
	if m.Kind != plugins.KindHook && m.Kind != plugins.KindAgent {
		problems = append(problems, fmt.Sprintf("unknown kind %q (want %q or %q)", m.Kind, plugins.KindHook, plugins.KindAgent))
	}
	if m.ProtocolVersion != plugins.ProtocolVersion {
		problems = append(problems, fmt.Sprintf("speaks protocol version %d, this weave speaks %d: rebuild it against this weave", m.ProtocolVersion, plugins.ProtocolVersion))
	}
	if m.Name != e.Name {
		l.InfoName = m.Name
	}
	if m.Name == "" {
		problems = append(problems, "its Info has no name")
	}
	if m.Kind == plugins.KindHook && len(m.Events) == 0 {
		problems = append(problems, "a hook that handles no events: list them in Info.Events")
	}
	if err := m.CheckTools(); err != nil {
		problems = append(problems, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if len(problems) > 0 {
		l.Status, l.Error = pluginError, fmt.Sprintf("plugin %q (%s): %s", e.Name, e.Path, strings.Join(problems, "; "))
	}
	return l
}

func countErrors(list []pluginListing) int {
	n := 0
	for _, l := range list {
		if l.Status != pluginOK {
			n++
		}
	}
	return n
}

func writePluginList(w io.Writer, list []pluginListing) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tVERSION\tEVENTS/ROLE\tSOURCE\tSTATUS\tPATH")
	for _, l := range list {
		what := l.Role
		if l.Kind == plugins.KindHook {
			what = strings.Join(l.Events, ",")
		}
		name := l.Name
		if l.InfoName != "" {
			name += " (" + l.InfoName + ")"
		}
		path := l.Path
		if len(l.Args) > 0 {
			path += " " + strings.Join(l.Args, " ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, orDash(string(l.Kind)), orDash(l.Version), orDash(what), l.Source, l.Status, path)
	}
	_ = tw.Flush()
	for _, l := range list {
		if l.Error != "" {
			fmt.Fprintf(w, "\n%s: %s", l.Name, l.Error)
		}
	}
	if countErrors(list) > 0 {
		fmt.Fprintln(w)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
