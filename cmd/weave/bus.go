package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/bus/natsbus"
	"github.com/weavehq/weave/bus/serve"
	"github.com/weavehq/weave/host/busface"
)

func newCmdBus(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bus",
		Short: "Run a standalone bus and inspect its dead letters",
		Example: `  weave bus serve --ws 127.0.0.1:8787
  weave bus dlq --bus ws://127.0.0.1:8787`,
	}
	cmd.AddCommand(newCmdBusServe(g, s, nil), newCmdBusDLQ(g, s), newCmdBusJoin(g, s))
	return cmd
}

type busServeOptions struct {
	*globalOptions
	Streams *Streams
	WS      string
	UDS     string
	HTTP    string
	// ready, when set, is called once every face listens (tests).
	ready func()
}

func newCmdBusServe(g *globalOptions, s *Streams, runF func(context.Context, *busServeOptions) error) *cobra.Command {
	opts := &busServeOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "serve [--ws ADDR] [--uds PATH] [--http ADDR]",
		Short: "Run a standalone bus that peers, hooks and agents join",
		Example: `  weave bus serve --ws 127.0.0.1:8787
  weave bus serve --uds /tmp/weave.sock --http 127.0.0.1:8788`,
		Long: `Run a bus (config bus.backend: the embedded memory bus, or nats with bus.url)
and serve it until Ctrl-C on the faces asked for:

  --ws ADDR    JSON-RPC 2.0 over WebSocket (peers in any language; ` + "`weave start-work --bus ws://ADDR`" + `
               and ` + "`weave send-message`" + ` join here). The same address serves
               /bus/retained, /bus/replay and /bus/dead-letters over HTTP, which
               ` + "`weave status`" + ` and ` + "`weave bus dlq`" + ` use.
  --uds PATH   the v1 envelope protocol over a Unix socket (mode 0600).
  --http ADDR  the v1 envelope protocol over HTTP, with its SSE event stream.

The envelope faces keep their sessions and events on the bus (session:<id>,
append-only), so several bus serve processes on one nats bus serve the same
sessions and a client may reconnect to any of them. Off loopback, a token is required (bus.token or
WEAVE_BUS_TOKEN) and clients send it as "Authorization: Bearer <token>". On loopback
without one, --ws and --http create a token in $XDG_RUNTIME_DIR/weave/bus.token (mode
0600), which local weave commands read: peers need it for hook:, agent: and system:
topics and the /bus/ admin routes, and on --http for every command but the reads
(session.list, agent.list, events.history, the event streams); other topics stay
open to local peers.
Prints the address of each face once it listens. Port 0 picks a free port.`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			if opts.WS == "" && opts.UDS == "" && opts.HTTP == "" {
				return usageErrorf("bus serve needs at least one of --ws ADDR, --uds PATH, --http ADDR (e.g. --ws 127.0.0.1:7892)")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return busServeRun(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.WS, "ws", "", "serve JSON-RPC over WebSocket on ADDR (host:port)")
	cmd.Flags().StringVar(&opts.UDS, "uds", "", "serve the v1 envelope protocol on the Unix socket PATH")
	cmd.Flags().StringVar(&opts.HTTP, "http", "", "serve the v1 envelope protocol over HTTP on ADDR (host:port)")
	return cmd
}

func busServeRun(ctx context.Context, opts *busServeOptions) error {
	project, cfg, _, err := opts.optionalProjectConfig()
	if err != nil {
		return err
	}
	if u := cfg.Bus.URL; strings.HasPrefix(u, "ws://") || strings.HasPrefix(u, "wss://") {
		return fmt.Errorf("bus.url is %s, another weave bus: bus serve runs its own; unset bus.url, or set bus.backend nats with a nats:// URL", natsbus.Redact(u))
	}
	b, closeBus, err := busface.Open(ctx, cfg, "")
	if err != nil {
		return err
	}
	defer closeBus()
	srv, err := serve.Open(ctx, b, serve.Options{
		WS:    opts.WS,
		UDS:   opts.UDS,
		HTTP:  opts.HTTP,
		Token: busface.Token(cfg),
		Limits: serve.Limits{
			MaxFrameBytes:         cfg.Bus.MaxFrameBytes,
			MaxSubscriptions:      cfg.Bus.MaxSubscriptions,
			MaxInFlight:           cfg.Bus.MaxInFlight,
			MaxTotalSubscriptions: cfg.Bus.MaxTotalSubscriptions,
			MaxConnections:        cfg.Bus.MaxConnections,
			MaxGuestConnections:   cfg.Bus.MaxGuestConnections,
			MaxSessions:           cfg.Bus.MaxSessions,
			BodyTimeout:           cfg.Bus.HTTPBodyTimeout,
			IdleTimeout:           cfg.Bus.HTTPIdleTimeout,
		},
		RequirePayloadType: cfg.Bus.RequirePayloadType,
		AgentCommand:       agentCommand(cfg.Bus.AgentCommand),
		Workspace:          project,
		AgentOutput:        opts.Streams.ErrOut,
		Logger:             slog.New(slog.NewTextHandler(opts.Streams.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	var needsToken *serve.TokenError
	if errors.As(err, &needsToken) {
		return usageErrorf("--%s %s listens beyond loopback: set a token (bus.token or WEAVE_BUS_TOKEN) that clients must send, or listen on 127.0.0.1", needsToken.Face, needsToken.Addr)
	}
	if err != nil {
		return err
	}
	defer srv.Close()
	backend := "memory"
	if cfg.Bus.URL != "" {
		backend = "nats " + natsbus.Redact(cfg.Bus.URL)
	}
	fmt.Fprintf(opts.Streams.Out, "bus      %s\n", backend)
	for _, f := range []struct{ name, where string }{{"ws", srv.WS}, {"uds", srv.UDS}, {"http", srv.HTTP}, {"token", srv.TokenFile}} {
		if f.where != "" {
			fmt.Fprintf(opts.Streams.Out, "%-8s %s\n", f.name, f.where)
		}
	}
	fmt.Fprintln(opts.Streams.ErrOut, "serving the bus; Ctrl-C to stop")
	if opts.ready != nil {
		opts.ready()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-srv.Err():
		return err
	}
}

// agentCommand runs config bus.agent_command through the shell, so that it
// may hold arguments and quotes.
func agentCommand(cmd string) []string {
	if strings.TrimSpace(cmd) == "" {
		return nil
	}
	return []string{"sh", "-c", cmd}
}

// openBusFlag opens the bus a client command talks to: --bus, else config
// bus.url, else WEAVE_BUS_URL. The embedded bus is never the answer: it
// would be a new, empty bus in this process.
func openBusFlag(ctx context.Context, g *globalOptions, flag, what string) (bus.Bus, func() error, error) {
	_, cfg, _, err := g.optionalProjectConfig()
	if err != nil {
		return nil, nil, err
	}
	url := busface.URL(cfg, flag)
	if url == "" {
		return nil, nil, usageErrorf("no bus to %s: pass --bus ws://HOST:PORT (a `weave bus serve`) or nats://HOST:PORT, or set %s", what, busface.URLEnv)
	}
	return openBusHinted(ctx, cfg, url)
}

func newCmdBusDLQ(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	var busURL string
	cmd := &cobra.Command{
		Use:   "dlq [--json] [--bus URL]",
		Short: "List the bus's dead letters; `dlq replay ID` re-sends one",
		Example: `  weave bus dlq --bus ws://127.0.0.1:8787
  weave bus dlq --json | jq -r '.[].id'`,
		Long: `List the dead letters of a running bus: deliveries it gave up on after
bus.max_attempts, full queues, failed subscribers. The bus is --bus URL, else
bus.url, else WEAVE_BUS_URL: a ws:// URL of a ` + "`weave bus serve`" + ` (read over its
HTTP admin routes) or a nats:// URL (dead letters are shared through
JetStream). The embedded bus of a ` + "`weave start-work`" + ` without a bus URL lives
only inside that process and cannot be inspected from outside.`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			b, closeBus, err := openBusFlag(c.Context(), g, busURL, "read dead letters from")
			if err != nil {
				return err
			}
			defer closeBus()
			dls, err := b.DeadLetters(c.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if dls == nil {
					dls = []bus.DeadLetter{}
				}
				return busJSON(s.Out, dls)
			}
			writeDeadLetters(s.Out, dls)
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&busURL, "bus", "", "bus URL (ws:// or nats://); default bus.url or "+busface.URLEnv)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the dead letters as JSON")
	replay := &cobra.Command{
		Use:     "replay ID",
		Short:   "Re-send one dead letter to its subscriber (or its topic) and print the result",
		Example: `  weave bus dlq replay "$(weave bus dlq --json | jq -r '.[0].id')"`,
		Args:    argsBetween(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			b, closeBus, err := openBusFlag(c.Context(), g, busURL, "replay a dead letter on")
			if err != nil {
				return err
			}
			defer closeBus()
			res, err := b.ReplayDeadLetter(c.Context(), args[0])
			if errors.Is(err, bus.ErrNotFound) {
				return fmt.Errorf("no dead letter %q on the bus: list them with `weave bus dlq`", args[0])
			}
			if err != nil {
				return err
			}
			if err := busJSON(s.Out, res); err != nil {
				return err
			}
			if res.DeadLettered || !res.Processed() {
				return &exitError{code: exitFailed, err: fmt.Errorf("the replay of %s was not processed: it is a dead letter again (see `weave bus dlq`)", args[0])}
			}
			return nil
		},
	}
	cmd.AddCommand(replay)
	return cmd
}

func writeDeadLetters(w io.Writer, dls []bus.DeadLetter) {
	if len(dls) == 0 {
		fmt.Fprintln(w, "no dead letters")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIME\tTOPIC\tSUBSCRIBER\tATTEMPTS\tREASON\t")
	for _, d := range dls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t\n", d.ID, d.Time.UTC().Format(time.RFC3339), d.Message.Topic, d.Subscriber, d.Attempts, d.Reason)
	}
	_ = tw.Flush()
}

// writeLoopInfo prints the loop state read from the bus, for `weave
// status`; nil (no bus URL) prints nothing.
func writeLoopInfo(w io.Writer, info *busface.LoopInfo, now time.Time) {
	if info == nil {
		return
	}
	e := info.Event
	switch {
	case e == nil:
		fmt.Fprintf(w, "loop: nothing published on %s at %s\n", loop.TopicCurrent, info.Bus)
	case e.Kind == loop.KindState:
		f, _ := e.Top()
		ago := now.Sub(e.UpdatedAt).Truncate(time.Second)
		fmt.Fprintf(w, "loop: running, task %d of %d (run %s, updated %s ago)\n", f.Iter, f.Max, e.RunID, ago)
		if info.Stale {
			fmt.Fprintf(w, "      stale: no update for over %s; the run that wrote it is presumed dead\n", loop.StateTTL)
		}
	case e.Kind == loop.KindDone:
		fmt.Fprintf(w, "loop: done (%s)\n", e.Reason)
	case e.Resumable && e.Reason == loop.ReasonUserCancelled:
		fmt.Fprintln(w, "loop: paused by the user; `weave start-work` resumes it")
	case e.Resumable:
		fmt.Fprintln(w, "loop: paused (a task failed or the run paused); `weave start-work` resumes it")
	case e.Reason != "":
		fmt.Fprintf(w, "loop: aborted (%s)\n", e.Reason)
	default:
		fmt.Fprintln(w, "loop: aborted (a task failed)")
	}
}

func busJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
