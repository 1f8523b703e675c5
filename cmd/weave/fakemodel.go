package main

import (
	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host/model/modeltest"
)

// newCmdFakeModel serves the scripted fake model from the weave binary, so
// that agents can be tried offline without a clone of the source.
func newCmdFakeModel(s *Streams) *cobra.Command {
	var script, addr string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "fakemodel",
		Short: "Serve a scripted fake model, to try the agents offline",
		Long: `Serve a fake model that speaks the OpenAI and Anthropic wire formats and
answers from a script of turns (docs/fake-model.md): turns in order, turns
kept for an agent or for the answer to a tool result, and default turns that
are never used up. Without --script it answers every request with a short
demo text. It prints its URL on the first line of stdout and how to point
weave at it on stderr, and serves until Ctrl-C.`,
		Example: `  weave fakemodel --addr 127.0.0.1:8089 &
  WEAVE_MODEL_PROVIDER=openai WEAVE_MODEL_BASE_URL=http://127.0.0.1:8089/v1 weave chat -p "hello"
  weave fakemodel --script turns.json`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			args := []string{"--addr", addr}
			if script != "" {
				args = append(args, "--script", script)
			}
			if quiet {
				args = append(args, "--quiet")
			}
			if code := modeltest.Main(c.Context(), "weave fakemodel", args, s.Out, s.ErrOut); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&script, "script", "", "JSON file of turns to answer (default: a demo that answers every request)")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "address to listen on")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "do not print a line per request")
	return cmd
}
