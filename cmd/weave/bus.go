package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/envelope"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/chat"
)

func newCmdBus(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bus",
		Short: "Run a standalone bus and inspect its dead letters",
		Example: `  weave bus serve --ws 127.0.0.1:8787
  weave bus dlq --bus ws://127.0.0.1:8787`,
	}
	cmd.AddCommand(newCmdBusServe(g, s, nil), newCmdBusDLQ(g, s))
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
		return fmt.Errorf("bus.url is %s, another weave bus: bus serve runs its own; unset bus.url, or set bus.backend nats with a nats:// URL", u)
	}
	token := host.BusToken(cfg)
	// A configured token guards every request of the envelope HTTP face;
	// without one, the token created below guards its commands that change
	// what a session's agents do (envelope.Options.Token), and its reads
	// stay open to local peers.
	httpToken := token
	var tokenFile string
	if token == "" && (opts.WS != "" || opts.HTTP != "") {
		// Hook, agent and system topics and the admin routes always need a
		// token; one kept in a 0600 file that local weave commands read
		// keeps local use free of setup.
		if tokenFile, err = jsonrpc.TokenPath(); err != nil {
			return err
		}
		if token, err = jsonrpc.LoadOrCreateToken(tokenFile); err != nil {
			return fmt.Errorf("%w; or set bus.token", err)
		}
	}
	for _, f := range []struct{ flag, addr string }{{"--ws", opts.WS}, {"--http", opts.HTTP}} {
		if f.addr != "" && !jsonrpc.IsLoopback(f.addr) && httpToken == "" {
			return usageErrorf("%s %s listens beyond loopback: set a token (bus.token or WEAVE_BUS_TOKEN) that clients must send, or listen on 127.0.0.1", f.flag, f.addr)
		}
	}
	b, closeBus, err := host.OpenBus(ctx, cfg, "")
	if err != nil {
		return err
	}
	defer closeBus()
	logger := slog.New(slog.NewTextHandler(opts.Streams.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	limits := jsonrpc.HTTPLimits{
		BodyTimeout: cfg.Bus.HTTPBodyTimeout,
		IdleTimeout: cfg.Bus.HTTPIdleTimeout,
		MaxConns:    cfg.Bus.MaxConnections,
	}
	backend := "memory"
	if cfg.Bus.URL != "" {
		backend = "nats " + cfg.Bus.URL
	}
	fmt.Fprintf(opts.Streams.Out, "bus      %s\n", backend)

	if cmd := agentCommand(cfg.Bus.AgentCommand); cmd != nil {
		// The default handler starts an agent for a message nobody is
		// subscribed to. Hook requests, loop events and model events are
		// not work for an agent: the oldest subscriptions on hook:, loop:
		// and model: answer "not processed" so that they never start one,
		// and any peer's subscription there still comes first.
		for _, prefix := range []string{"hook:", "loop:", chat.EventsTopicPrefix} {
			if _, err := b.Subscribe(ctx, prefix, notForAgents, bus.SubscribeOptions{Name: "weave.bus"}); err != nil {
				return err
			}
		}
	}
	if opts.WS != "" {
		ln, err := net.Listen("tcp", opts.WS)
		if err != nil {
			return fmt.Errorf("listen for the bus WebSocket on %s: %w", opts.WS, err)
		}
		url := "ws://" + ln.Addr().String()
		srv, err := jsonrpc.NewServer(b, jsonrpc.Options{
			Token:                 token,
			TokenFile:             tokenFile,
			Loopback:              jsonrpc.IsLoopback(opts.WS),
			MaxFrameBytes:         int64(cfg.Bus.MaxFrameBytes),
			MaxSubscriptions:      cfg.Bus.MaxSubscriptions,
			MaxInFlight:           cfg.Bus.MaxInFlight,
			MaxTotalSubscriptions: cfg.Bus.MaxTotalSubscriptions,
			MaxConnections:        cfg.Bus.MaxConnections,
			RequirePayloadType:    cfg.Bus.RequirePayloadType,
			AgentCommand:          agentCommand(cfg.Bus.AgentCommand),
			Workspace:             project,
			BusURL:                url,
			AgentOutput:           opts.Streams.ErrOut,
		})
		if err != nil {
			ln.Close()
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/bus/", jsonrpc.AdminHandler(b, token))
		mux.Handle("/", srv)
		stops = append(stops, serveHTTP(ln, jsonrpc.SameOrigin(ln.Addr(), jsonrpc.IsLoopback(opts.WS), mux), limits, errc, func() { _ = srv.Close() }))
		fmt.Fprintf(opts.Streams.Out, "ws       %s\n", url)
	}
	if opts.UDS != "" || opts.HTTP != "" {
		// The envelope face keeps its sessions, agents and events on the
		// bus itself, so servers sharing a nats bus serve the same sessions.
		eo := envelope.Options{
			MaxFrameBytes: cfg.Bus.MaxFrameBytes,
			MaxSessions:   cfg.Bus.MaxSessions,
			Logger:        logger,
		}
		if httpToken == "" {
			eo.Token, eo.TokenFile = token, tokenFile
		}
		broker, err := envelope.Open(ctx, b, eo)
		if err != nil {
			return err
		}
		stops = append(stops, func() { _ = broker.Close() })
		if opts.UDS != "" {
			ln, err := envelope.ListenUnix(opts.UDS)
			if err != nil {
				return err
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if err := broker.Serve(ctx, ln); err != nil {
					errc <- err
				}
			}()
			stops = append(stops, func() { cancel(); <-done })
			fmt.Fprintf(opts.Streams.Out, "uds      %s\n", opts.UDS)
		}
		if opts.HTTP != "" {
			ln, err := net.Listen("tcp", opts.HTTP)
			if err != nil {
				return fmt.Errorf("listen for the bus HTTP face on %s: %w", opts.HTTP, err)
			}
			h := jsonrpc.SameOrigin(ln.Addr(), jsonrpc.IsLoopback(opts.HTTP), bearer(httpToken, broker.Handler()))
			stops = append(stops, serveHTTP(ln, h, limits, errc, nil))
			fmt.Fprintf(opts.Streams.Out, "http     http://%s\n", ln.Addr())
		}
	}
	if tokenFile != "" {
		fmt.Fprintf(opts.Streams.Out, "token    %s\n", tokenFile)
	}
	fmt.Fprintln(opts.Streams.ErrOut, "serving the bus; Ctrl-C to stop")
	if opts.ready != nil {
		opts.ready()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

func notForAgents(context.Context, bus.Message) (bus.Ack, error) {
	return bus.Ack{Processed: false}, nil
}

// serveHTTP serves h on ln and returns the func that stops it; before
// shuts down what http.Server does not track (hijacked WebSockets).
func serveHTTP(ln net.Listener, h http.Handler, limits jsonrpc.HTTPLimits, errc chan<- error, before func()) func() {
	hs := jsonrpc.NewHTTPServer(h, limits)
	go func() {
		if err := hs.Serve(jsonrpc.Limit(ln, limits.MaxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("serve on %s: %w", ln.Addr(), err)
		}
	}()
	return func() {
		if before != nil {
			before()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}
}

// bearer requires the token, when there is one, on every request.
func bearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weave-bus"`)
			http.Error(w, "missing or wrong bearer token: send Authorization: Bearer <bus.token>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
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
	url := host.BusURL(cfg, flag)
	if url == "" {
		return nil, nil, usageErrorf("no bus to %s: pass --bus ws://HOST:PORT (a `weave bus serve`) or nats://HOST:PORT, or set %s", what, host.BusURLEnv)
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
	cmd.PersistentFlags().StringVar(&busURL, "bus", "", "bus URL (ws:// or nats://); default bus.url or "+host.BusURLEnv)
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
func writeLoopInfo(w io.Writer, info *host.LoopInfo, now time.Time) {
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
		fmt.Fprintf(w, "loop: running, iteration %d of %d (run %s, updated %s ago)\n", f.Iter, f.Max, e.RunID, ago)
		if info.Stale {
			fmt.Fprintf(w, "      stale: no update for over %s; the run that wrote it is presumed dead\n", loop.StateTTL)
		}
	case e.Kind == loop.KindDone:
		fmt.Fprintf(w, "loop: done (%s)\n", e.Reason)
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
