package main

import (
	"github.com/spf13/cobra"

	"github.com/weavehq/weave/config"
)

func newCmdConfig(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect Weave's configuration",
	}
	var sources bool
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration",
		Long: `Print the effective configuration: built-in defaults, overridden by the user
file ($XDG_CONFIG_HOME/weave/config.yaml), the project file
(.weave/config.yaml), WEAVE_* environment variables and flags, in that order.
With --sources, each value says which layer it came from.`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			_, cfg, src, err := g.optionalProjectConfig()
			if err != nil {
				return err
			}
			return config.Render(s.Out, cfg, src, sources)
		},
	}
	show.Flags().BoolVar(&sources, "sources", false, "annotate each value with the layer it came from")
	cmd.AddCommand(show)
	return cmd
}
