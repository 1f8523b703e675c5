package main

import (
	"github.com/spf13/cobra"

	"github.com/weavehq/weave/config"
)

func newCmdConfig(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect Weave's configuration",
		Example: `  weave config show
  weave config show --sources`,
	}
	var sources, asJSON bool
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration",
		Long: `Print the effective configuration: built-in defaults, overridden by the user
file ($XDG_CONFIG_HOME/weave/config.yaml), the project file
(.weave/config.yaml), WEAVE_* environment variables and flags, in that order.
With --sources, each value says which layer it came from. With --json, one
object shaped like the file, durations in milliseconds under the key's name
plus "_ms" (runbook.block_timeout is runbook.block_timeout_ms), and with
--sources a "sources" object from each key to its layer.`,
		Example: `  weave config show
  weave config show --sources
  weave config show --json | jq .runbook.retries`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			// Showing a config acts on nothing: no trust is needed.
			project, err := g.optionalProject()
			if err != nil {
				return err
			}
			cfg, src, err := loadConfigUntrusted(project, nil)
			if err != nil {
				return err
			}
			if asJSON {
				return config.RenderJSON(s.Out, cfg, src, sources)
			}
			return config.Render(s.Out, cfg, src, sources)
		},
	}
	show.Flags().BoolVar(&sources, "sources", false, "annotate each value with the layer it came from")
	show.Flags().BoolVar(&asJSON, "json", false, "print the configuration as JSON (durations in milliseconds)")
	cmd.AddCommand(show)
	return cmd
}
