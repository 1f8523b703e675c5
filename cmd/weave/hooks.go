package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/plugins"
)

func newCmdHooks(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "List the hooks of this project and try one on a sample event",
		Example: `  weave hooks list
  echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}' | weave hooks test write-existing-file-guard --event -`,
	}
	cmd.AddCommand(newCmdHooksList(g, s), newCmdHooksTest(g, s))
	return cmd
}

// projectHooks opens the host with every hook of the project; the caller
// closes it.
func projectHooks(ctx context.Context, g *globalOptions, s *Streams) (*host.Host, error) {
	project, err := g.project()
	if err != nil {
		return nil, err
	}
	cfg, _, err := g.loadConfig(project, nil)
	if err != nil {
		return nil, err
	}
	warnUnrunHooks(s.ErrOut, cfg)
	logger := slog.New(slog.NewTextHandler(s.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return host.Open(ctx, project, cfg, host.WithLogger(logger), host.WithHooks())
}

func newCmdHooksList(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every hook: built-in, command hooks from config, and hook plugins",
		Example: `  weave hooks list
  weave hooks list --json | jq -r '.[].name'`,
		Long: `List every hook of the project in the order the pipeline runs them on an
event (priority, then name): built-in hooks, command hooks from config
` + "`hooks:`" + ` (Claude Code's settings shape), and hook plugins found in
.weave/plugins/, the user's plugin directory and config ` + "`plugins:`" + `.`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			h, err := projectHooks(c.Context(), g, s)
			if err != nil {
				return err
			}
			defer h.Close(context.WithoutCancel(c.Context()))
			all, opts := h.Hooks()
			list := hooks.List(all, opts)
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			writeHookList(s.Out, list)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

func writeHookList(w io.Writer, list []hooks.Listing) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tPRIORITY\tEVENTS\tTIMEOUT\tFAIL\t")
	for _, l := range list {
		name := l.Name
		if l.Disabled {
			name += " (disabled)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t\n", name, l.Source, l.Priority, strings.Join(l.EventLabels(), ","), l.Timeout, l.Fail)
	}
	_ = tw.Flush()
}

func newCmdHooksTest(g *globalOptions, s *Streams) *cobra.Command {
	var eventFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test NAME --event FILE",
		Short: "Run one hook on a sample event and print its decision",
		Long: `Run one hook, through the same transport the pipeline uses, on the event in
FILE and print its decision. FILE holds a Weave event as JSON, or the JSON a
Claude Code hook receives on stdin. Exits 0 whatever the decision; 1 when the
hook could not be run.`,
		Example:           hooksTestExample,
		Args:              argsBetween(1, 1),
		ValidArgsFunction: completeHookNames(g, s),
		RunE: func(c *cobra.Command, args []string) error {
			if eventFile == "" {
				return usageErrorf("hooks test needs --event FILE (a JSON event)")
			}
			var ev plugins.Event
			var err error
			if eventFile == "-" {
				ev, err = hooks.ReadEvent(s.In)
			} else {
				ev, err = hooks.LoadEventFile(eventFile)
			}
			if err != nil {
				return err
			}
			if ev.Time.IsZero() {
				ev.Time = time.Now()
			}
			h, err := projectHooks(c.Context(), g, s)
			if err != nil {
				return err
			}
			defer h.Close(context.WithoutCancel(c.Context()))
			all, _ := h.Hooks()
			r, err := hooks.Find(all, args[0])
			if err != nil {
				return err
			}
			if ev.Cwd == "" {
				if p, perr := g.project(); perr == nil {
					ev.Cwd = p
				}
			}
			out, err := hooks.RunOne(c.Context(), r, ev)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			writeOutcome(s.Out, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&eventFile, "event", "", "JSON file with the event to send, or - for stdin")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	return cmd
}

func writeOutcome(w io.Writer, out hooks.Outcome) {
	fmt.Fprintf(w, "decision: %s\n", out.Action)
	if out.Reason != "" {
		fmt.Fprintf(w, "reason:   %s\n", out.Reason)
	}
	if len(out.Args) > 0 {
		b, _ := json.Marshal(out.Args)
		fmt.Fprintf(w, "args:     %s\n", b)
	}
	if out.Text != "" {
		fmt.Fprintf(w, "text:     %s\n", out.Text)
	}
	for _, c := range out.Context {
		fmt.Fprintf(w, "context:  %s\n", indentRest(c, "          "))
	}
	for _, r := range out.Reports {
		line := fmt.Sprintf("%s (%s): %s in %s", r.Hook, r.Source, r.Action, r.Duration.Round(time.Microsecond))
		switch {
		case r.Skipped:
			line = fmt.Sprintf("%s (%s): skipped", r.Hook, r.Source)
		case r.Error != "":
			line += fmt.Sprintf("; failed: %s (policy %s)", r.Error, r.Policy)
		}
		if r.Note != "" {
			line += "; " + r.Note
		}
		fmt.Fprintf(w, "report:   %s\n", line)
	}
}

// hooksTestExample is `weave hooks test`'s example; a test runs it in a new
// project, so it stays true.
const hooksTestExample = `  weave hooks list
  echo '{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"README.md","content":"x"}}' | weave hooks test write-existing-file-guard --event -
  echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}' > e.json
  weave hooks test weave.write-existing-file-guard --event e.json --json`
