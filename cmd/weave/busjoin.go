package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/envagents"
)

type busJoinOptions struct {
	*globalOptions
	Streams *Streams
	UDS     string
	Session string
	// ready, when set, is called once every role has joined (tests).
	ready func()
}

// newCmdBusJoin puts Weave's own agents into a v1 envelope session: the
// way an envelope client (codex-weave's TUI) gets Loom to talk to.
func newCmdBusJoin(g *globalOptions, s *Streams) *cobra.Command {
	opts := &busJoinOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "join ROLE... --session ID --uds PATH",
		Short: "Add Weave's agents (loom, tapestry, weft...) to a v1 envelope session",
		Example: `  weave bus serve --uds /tmp/weave.sock
  weave bus join loom --session 6f1c... --uds /tmp/weave.sock`,
		Long: `Add each ROLE, one of this project's agents, to the v1 envelope session ID on
the bus socket PATH (a ` + "`weave bus serve --uds PATH`" + `). Each joins as the agent
whose id is its role's name (loom, tapestry, ...) and answers, until Ctrl-C,
the actions addressed to it: a message is a turn of its conversation, answered
with a reply; the controls new, compact, interrupt and review act on that
conversation (review asks weft). docs/weave-protocol.md says more.`,
		Args: argsBetween(1, 16),
		RunE: func(c *cobra.Command, args []string) error {
			if opts.UDS == "" || opts.Session == "" {
				return usageErrorf("bus join needs --session ID and --uds PATH (the socket of a `weave bus serve --uds PATH`)")
			}
			return busJoinRun(c.Context(), opts, args)
		},
	}
	cmd.Flags().StringVar(&opts.UDS, "uds", "", "the bus's v1 envelope socket PATH")
	cmd.Flags().StringVar(&opts.Session, "session", "", "the envelope session ID to join")
	return cmd
}

func busJoinRun(ctx context.Context, opts *busJoinOptions, roles []string) error {
	project, cfg, err := opts.projectWithModel("bus join")
	if err != nil {
		return err
	}
	h, closeHost, err := openLoggedHost(ctx, project, cfg, host.WithTools())
	if err != nil {
		return err
	}
	defer closeHost()
	for i, r := range roles {
		role, ok := h.Gate().Role(r)
		if !ok {
			return usageErrorf("no agent %q in this project (have %s)", r, strings.Join(h.Gate().Names(), ", "))
		}
		roles[i] = role.Name
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(roles))
	joined := make(chan struct{}, len(roles))
	for _, role := range roles {
		go func() {
			err := envagents.Join(ctx, opts.UDS, opts.Session, role, h, func() { joined <- struct{}{} })
			if err != nil {
				err = fmt.Errorf("%s: %w", role, err)
			}
			errs <- err
		}()
	}
	for range roles {
		select {
		case <-joined:
		case err := <-errs:
			cancel()
			return &exitError{code: exitFailed, err: errors.Join(err, errors.New("not joined"))}
		}
	}
	fmt.Fprintf(opts.Streams.Out, "joined   %s %s\n", opts.Session, strings.Join(roles, " "))
	if opts.ready != nil {
		opts.ready()
	}
	var first error
	for range roles {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}
