package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/envelope"
	"github.com/weavehq/weave/bus/guard"
	"github.com/weavehq/weave/bus/jsonrpc"
)

// TokenError is Open's error when a face would listen beyond loopback
// without a configured token: a setup mistake, not a failure.
type TokenError struct {
	// Face is "ws" or "http"; Addr is the address it would listen on.
	Face, Addr string
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("the %s face on %s listens beyond loopback: set a token (bus.token or WEAVE_BUS_TOKEN) that clients must send, or listen on 127.0.0.1", e.Face, e.Addr)
}

// shutdownGrace bounds how long Close waits for an HTTP face's requests in
// flight to finish.
const shutdownGrace = 5 * time.Second

// Options say which faces to serve and how.
type Options struct {
	// WS is the address (host:port) of the JSON-RPC WebSocket face, with
	// the /bus/ admin routes beside it; empty leaves it off.
	WS string
	// UDS is the path of the v1 envelope face's Unix socket (mode 0600);
	// empty leaves it off.
	UDS string
	// HTTP is the address (host:port) of the v1 envelope face over HTTP;
	// empty leaves it off.
	HTTP string
	// Token is the configured bus token (bus.token, $WEAVE_BUS_TOKEN): the
	// WebSocket face's protected topics and admin routes and every request
	// of the envelope HTTP face need it. Without one, Open creates one in
	// TokenFile for the WebSocket and HTTP faces, which guards the same
	// except the envelope reads; a face beyond loopback then refuses to
	// start (*TokenError).
	Token string
	// TokenFile is where the created token is kept; empty means
	// guard.TokenPath().
	TokenFile string
	// Limits bound what peers can hold.
	Limits Limits
	// RequirePayloadType refuses a sendMessage whose payload has no type
	// (bus.require_payload_type).
	RequirePayloadType bool
	// AgentCommand is the default handler (bus.agent_command): started for
	// a message on the WebSocket face that finds no subscriber, on the
	// topics the topic table lets it (bus.MayLaunch). Empty turns it off.
	AgentCommand []string
	// Workspace is the started agents' working directory.
	Workspace string
	// AgentOutput receives the started agents' output; nil discards it.
	AgentOutput io.Writer
	// Logger receives the envelope face's transport errors; nil discards.
	Logger *slog.Logger
}

// Limits are the bus.* limits of the faces; zero fields take the faces'
// defaults.
type Limits struct {
	MaxFrameBytes         int
	MaxSubscriptions      int
	MaxInFlight           int
	MaxTotalSubscriptions int
	MaxConnections        int
	// MaxGuestConnections is the WebSocket connections without the token
	// may hold together; 0 means half of MaxConnections.
	MaxGuestConnections int
	MaxSessions         int
	BodyTimeout         time.Duration
	IdleTimeout         time.Duration
}

// Server is a running bus server: the faces Open started, until Close.
type Server struct {
	// WS, UDS and HTTP are where the faces listen (ws://host:port, the
	// socket path, http://host:port); empty for a face not served.
	WS, UDS, HTTP string
	// TokenFile is where the token Open created is kept; empty when the
	// token was configured or no face needs one.
	TokenFile string

	errc   chan error
	cancel context.CancelFunc
	stops  []func()
}

// Open serves b on the faces opts names and returns once every one listens.
// On an error, what it had started is torn down again. The bus stays the
// caller's: Close does not close it.
func Open(ctx context.Context, b bus.Bus, opts Options) (_ *Server, err error) {
	if opts.WS == "" && opts.UDS == "" && opts.HTTP == "" {
		return nil, errors.New("serve the bus: no face to serve: set WS, UDS or HTTP")
	}
	for _, f := range []struct{ face, addr string }{{"ws", opts.WS}, {"http", opts.HTTP}} {
		if f.addr != "" && !guard.IsLoopback(f.addr) && opts.Token == "" {
			return nil, &TokenError{Face: f.face, Addr: f.addr}
		}
	}
	// The servers outlive Open's ctx: Close ends them.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{errc: make(chan error, 3), cancel: cancel}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()

	token := opts.Token
	if token == "" && (opts.WS != "" || opts.HTTP != "") {
		// Hook, agent and system topics and the admin routes always need a
		// token; one kept in a 0600 file that local weave commands read
		// keeps local use free of setup.
		path := opts.TokenFile
		if path == "" {
			if path, err = guard.TokenPath(); err != nil {
				return nil, err
			}
		}
		if token, err = guard.LoadOrCreateToken(path); err != nil {
			return nil, fmt.Errorf("%w; or set bus.token", err)
		}
		s.TokenFile = path
	}
	if len(opts.AgentCommand) > 0 {
		if err := s.keepAgentsOff(sctx, b); err != nil {
			return nil, err
		}
	}
	limits := guard.HTTPLimits{
		BodyTimeout: opts.Limits.BodyTimeout,
		IdleTimeout: opts.Limits.IdleTimeout,
		MaxConns:    opts.Limits.MaxConnections,
	}
	if opts.WS != "" {
		if err := s.serveWS(b, opts, token, limits); err != nil {
			return nil, err
		}
	}
	if opts.UDS != "" || opts.HTTP != "" {
		if err := s.serveEnvelope(sctx, b, opts, token, limits); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Err reports a face that stopped serving on its own (its listener
// failed); Close is still the caller's to call.
func (s *Server) Err() <-chan error { return s.errc }

// fail reports a face that stopped; the first reports are kept, and a
// face never blocks on reporting.
func (s *Server) fail(err error) {
	select {
	case s.errc <- err:
	default:
	}
}

// Close stops every face in the reverse order Open started them: the
// envelope faces, then the WebSocket face with its connections and the
// agents it started, then the subscriptions that keep the default handler
// off the host's topics. It is safe to call more than once.
func (s *Server) Close() error {
	stops := s.stops
	s.stops = nil
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	s.cancel()
	return nil
}

// keepAgentsOff subscribes, oldest of all, to the topics the default
// handler never starts an agent on, answering "not processed": a hook
// request or a loop event nobody else takes is not work for an agent, and
// any peer's subscription there still comes first. The bus's own topics
// (dead letters) are left to whoever asked for them.
func (s *Server) keepAgentsOff(ctx context.Context, b bus.Bus) error {
	for _, prefix := range bus.NoLaunchPrefixes() {
		if strings.HasPrefix(bus.DeadLetterTopic, prefix) {
			continue
		}
		sub, err := b.Subscribe(ctx, prefix, notForAgents, bus.SubscribeOptions{Name: "weave.bus"})
		if err != nil {
			return fmt.Errorf("keep the default handler off %s: %w", prefix, err)
		}
		s.stops = append(s.stops, func() { _ = sub.Unsubscribe() })
	}
	return nil
}

func notForAgents(context.Context, bus.Message) (bus.Ack, error) {
	return bus.Ack{Processed: false}, nil
}

// serveWS serves the JSON-RPC face and the admin routes on opts.WS.
func (s *Server) serveWS(b bus.Bus, opts Options, token string, limits guard.HTTPLimits) error {
	ln, err := net.Listen("tcp", opts.WS)
	if err != nil {
		return fmt.Errorf("listen for the bus WebSocket on %s: %w", opts.WS, err)
	}
	url := "ws://" + ln.Addr().String()
	loopback := guard.IsLoopback(opts.WS)
	srv, err := jsonrpc.NewServer(b, jsonrpc.Options{
		Token:                 token,
		TokenFile:             s.TokenFile,
		Loopback:              loopback,
		MaxFrameBytes:         int64(opts.Limits.MaxFrameBytes),
		MaxSubscriptions:      opts.Limits.MaxSubscriptions,
		MaxInFlight:           opts.Limits.MaxInFlight,
		MaxTotalSubscriptions: opts.Limits.MaxTotalSubscriptions,
		MaxConnections:        opts.Limits.MaxConnections,
		MaxGuestConnections:   opts.Limits.MaxGuestConnections,
		RequirePayloadType:    opts.RequirePayloadType,
		AgentCommand:          opts.AgentCommand,
		Workspace:             opts.Workspace,
		BusURL:                url,
		AgentOutput:           opts.AgentOutput,
	})
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/bus/", jsonrpc.AdminHandler(b, token))
	mux.Handle("/", srv)
	s.serveHTTP(ln, loopback, mux, limits, func() { _ = srv.Close() })
	s.WS = url
	return nil
}

// serveEnvelope serves the v1 envelope face on the Unix socket and over
// HTTP. The face keeps its sessions, agents and events on the bus itself,
// so servers sharing a nats bus serve the same sessions.
func (s *Server) serveEnvelope(ctx context.Context, b bus.Bus, opts Options, token string, limits guard.HTTPLimits) error {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	eo := envelope.Options{
		MaxFrameBytes: opts.Limits.MaxFrameBytes,
		MaxSessions:   opts.Limits.MaxSessions,
		Logger:        logger,
	}
	// A configured token guards every request of the HTTP face, in front
	// of it; without one, the created token guards the commands that change
	// what a session's agents do, and the reads stay open to local peers.
	if opts.Token == "" {
		eo.Token, eo.TokenFile = token, s.TokenFile
		eo.MaxGuestStreams = guestShare(opts.Limits)
	}
	broker, err := envelope.Open(ctx, b, eo)
	if err != nil {
		return err
	}
	s.stops = append(s.stops, func() { _ = broker.Close() })
	if opts.UDS != "" {
		ln, err := envelope.ListenUnix(opts.UDS)
		if err != nil {
			return err
		}
		uctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := broker.Serve(uctx, ln); err != nil {
				s.fail(err)
			}
		}()
		s.stops = append(s.stops, func() { cancel(); <-done })
		s.UDS = opts.UDS
	}
	if opts.HTTP != "" {
		ln, err := net.Listen("tcp", opts.HTTP)
		if err != nil {
			return fmt.Errorf("listen for the bus HTTP face on %s: %w", opts.HTTP, err)
		}
		s.serveHTTP(ln, guard.IsLoopback(opts.HTTP), guard.Require(opts.Token, broker.Handler()), limits, nil)
		s.HTTP = "http://" + ln.Addr().String()
	}
	return nil
}

// serveHTTP serves h on ln, hardened (guard.Harden), until Close; before
// shuts down what http.Server does not track (hijacked WebSockets).
func (s *Server) serveHTTP(ln net.Listener, loopback bool, h http.Handler, limits guard.HTTPLimits, before func()) {
	hs, limited := guard.Harden(ln, loopback, h, limits)
	go func() {
		if err := hs.Serve(limited); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.fail(fmt.Errorf("serve on %s: %w", ln.Addr(), err))
		}
	}()
	s.stops = append(s.stops, func() {
		if before != nil {
			before()
		}
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = hs.Shutdown(ctx)
	})
}

// guestShare is the connections peers without the token may hold together
// on a face: Limits.MaxGuestConnections, or half of the face's cap when it
// is unset or not below the cap.
func guestShare(l Limits) int {
	total := l.MaxConnections
	if total <= 0 {
		total = guard.DefaultMaxConnections
	}
	if l.MaxGuestConnections > 0 && l.MaxGuestConnections < total {
		return l.MaxGuestConnections
	}
	return max(1, total/2)
}
