package busface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/guard"
	"github.com/weavehq/weave/bus/jsonrpc"
	"github.com/weavehq/weave/bus/loop"
	"github.com/weavehq/weave/bus/natsbus"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/host/supervisor"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

// TokenEnv holds the bus token when config has none.
const TokenEnv = "WEAVE_BUS_TOKEN"

// URLEnv names the bus to join, for commands that take --bus.
const URLEnv = "WEAVE_BUS_URL"

// Options maps config `bus:` onto the bus options, with Weave's retained
// and append-only topics as the topic table keeps them (bus.DefaultOptions,
// bus.Topics).
func Options(cfg *config.Config) (bus.Options, error) {
	if cfg == nil {
		cfg = config.Default()
	}
	o := bus.DefaultOptions()
	policy, err := bus.ParsePolicy(cfg.Bus.DefaultPolicy)
	if err != nil {
		return o, fmt.Errorf("config bus.default_policy: %w", err)
	}
	if policy != "" {
		o.DefaultPolicy = policy
	}
	if cfg.Bus.MaxAttempts > 0 {
		o.MaxAttempts = cfg.Bus.MaxAttempts
	}
	if cfg.Bus.RequestTimeout > 0 {
		o.RequestTimeout = cfg.Bus.RequestTimeout
	}
	switch {
	case cfg.Bus.IdempotencyWindow > 0:
		o.IdempotencyWindow = cfg.Bus.IdempotencyWindow
	case cfg.Bus.IdempotencyWindow == 0:
		// Config says 0 turns it off; the bus takes 0 as "default", so a
		// window too short to ever hold a repeat stands for off.
		o.IdempotencyWindow = time.Nanosecond
	}
	if cfg.Bus.QueueSize > 0 {
		o.QueueSize = cfg.Bus.QueueSize
	}
	if cfg.Bus.MaxLogMessages > 0 {
		o.MaxLogMessages = cfg.Bus.MaxLogMessages
	}
	if cfg.Bus.MaxDeadLetters > 0 {
		o.MaxDeadLetters = cfg.Bus.MaxDeadLetters
	}
	if cfg.Bus.MaxTopics > 0 {
		o.MaxTopics = cfg.Bus.MaxTopics
	}
	if cfg.Bus.MaxStoreBytes > 0 {
		o.MaxStoreBytes = int64(cfg.Bus.MaxStoreBytes)
	}
	if err := o.Validate(); err != nil {
		return o, fmt.Errorf("config bus: %w", err)
	}
	return o, nil
}

// Token is the bus token: config bus.token, else $WEAVE_BUS_TOKEN.
func Token(cfg *config.Config) string {
	if cfg != nil && cfg.Bus.Token != "" {
		return cfg.Bus.Token
	}
	return os.Getenv(TokenEnv)
}

// tokenFor is the token sent to the bus at url: Token, else, for a
// bus on this machine, the one `weave bus serve` keeps in
// guard.TokenPath. The local file is never sent to another machine.
func tokenFor(cfg *config.Config, rawURL string) string {
	if tok := Token(cfg); tok != "" {
		return tok
	}
	u, err := url.Parse(rawURL)
	if err != nil || !guard.IsLoopback(u.Host) {
		return ""
	}
	path, err := guard.TokenPath()
	if err != nil {
		return ""
	}
	tok, _ := guard.ReadTokenFile(path)
	return tok
}

// URL picks the bus to join: the flag's value, else config bus.url
// (which $WEAVE_BUS_URL sets through the config's environment layer), else
// $WEAVE_BUS_URL itself. Empty means no bus outside this process.
func URL(cfg *config.Config, flag string) string {
	if flag != "" {
		return flag
	}
	if cfg != nil && cfg.Bus.URL != "" {
		return cfg.Bus.URL
	}
	return os.Getenv(URLEnv)
}

// Open opens the bus the host uses. url, when set, overrides config
// bus.url. Without a URL and with backend memory, it is an embedded memory
// bus, gone when the process exits. A nats:// (or tls://) URL, or backend
// nats with bus.url, opens the nats backend. A ws:// or wss:// URL joins a
// standalone bus (`weave bus serve`) over its JSON-RPC face, with the token
// of Token; see jsonrpc.Remote for what that bus can and cannot do. The
// returned func closes the bus (or the connection) and is safe to call
// once.
func Open(ctx context.Context, cfg *config.Config, url string) (bus.Bus, func() error, error) {
	if cfg == nil {
		cfg = config.Default()
	}
	if url == "" {
		url = cfg.Bus.URL
	}
	opts, err := Options(cfg)
	if err != nil {
		return nil, nil, err
	}
	if url == "" {
		if cfg.Bus.Backend == "nats" {
			return nil, nil, errors.New("bus.backend is nats but no bus URL is set: set bus.url (e.g. nats://127.0.0.1:4222) or pass --bus")
		}
		b, err := bus.NewMemory(opts)
		if err != nil {
			return nil, nil, err
		}
		return b, b.Close, nil
	}
	switch busScheme(url) {
	case "nats", "tls":
		auth, err := NATSAuth(cfg, url)
		if err != nil {
			return nil, nil, err
		}
		b, err := natsbus.New(ctx, url, opts, natsbus.WithAuth(auth))
		if err != nil {
			return nil, nil, fmt.Errorf("join the nats bus at %s: %w", natsbus.Redact(url), err)
		}
		return b, b.Close, nil
	case "ws", "wss":
		var dial []jsonrpc.DialOption
		if tok := tokenFor(cfg, url); tok != "" {
			dial = append(dial, jsonrpc.WithToken(tok))
		}
		if cfg.Bus.MaxFrameBytes > 0 {
			dial = append(dial, jsonrpc.WithMaxFrameBytes(int64(cfg.Bus.MaxFrameBytes)))
		}
		r, err := jsonrpc.DialRemote(ctx, url, jsonrpc.ClientInfo{Name: "weave", Version: "1"}, dial...)
		if err != nil {
			return nil, nil, err
		}
		return r, r.Close, nil
	}
	return nil, nil, fmt.Errorf("bus URL %q: use nats://HOST:PORT for a nats server or ws://HOST:PORT for a `weave bus serve`", natsbus.Redact(url))
}

func busScheme(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme)
}

// HookPriority places the bus hooks among the others (lower runs first):
// after the built-in guards, which use lower numbers.
const HookPriority = 500

// HookTopic is the topic a peer subscribes to to act as a hook on event.
func HookTopic(event string) string { return "hook:" + event }

// HookEventType is payload.type of a hook request.
const HookEventType = "hook.event"

// Hooks returns one pipeline entry per hook event that dispatches the
// event to the bus peers subscribed to hook:<event> (see the package doc for
// the payload and the results). Their timeout is
// config hook.timeout, their failure policy open.
func Hooks(ctx context.Context, b bus.Bus, cfg *config.Config) ([]hooks.Registered, error) {
	if b == nil {
		return nil, errors.New("bus hooks: no bus")
	}
	if cfg == nil {
		cfg = config.Default()
	}
	out := make([]hooks.Registered, 0, len(plugins.Events))
	for _, ev := range plugins.Events {
		h := &busHook{b: b, event: ev, info: plugins.Info{
			Name:     "bus." + ev,
			Version:  "1",
			Kind:     plugins.KindHook,
			Events:   []string{ev},
			Priority: HookPriority,
		}}
		out = append(out, hooks.Registered{
			Hook:    h,
			Info:    h.info,
			Timeout: cfg.Hook.Timeout,
			Fail:    hooks.FailOpen,
			Source:  hooks.SourceBus,
			Detail:  HookTopic(ev),
		})
	}
	return out, nil
}

type busHook struct {
	b     bus.Bus
	event string
	info  plugins.Info
}

func (h *busHook) Info(context.Context) (plugins.Info, error) { return h.info, nil }

// hookPayload is a hook request's payload: the event with a type.
type hookPayload struct {
	Type string `json:"type"`
	plugins.Event
}

// hookResult is what a peer's ack may say.
type hookResult struct {
	Action  plugins.Action `json:"action"`
	Reason  string         `json:"reason"`
	Args    map[string]any `json:"args"`
	Text    string         `json:"text"`
	Context string         `json:"context"`
}

func (h *busHook) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	// A bus in this process with no peer on the event's topic (start-work's
	// own, which no other process reaches) would deliver the event to
	// nobody: it is not encoded for nobody, once per tool call.
	if l, ok := h.b.(listened); ok && !l.Listened(HookTopic(h.event)) {
		return plugins.Decision{Action: plugins.Allow}, nil
	}
	payload, err := json.Marshal(hookPayload{Type: HookEventType, Event: ev})
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("encode %s for the bus: %w", ev.Name, err)
	}
	res, err := h.b.Request(ctx, bus.Message{Topic: HookTopic(h.event), Payload: payload})
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("bus hooks on %s: %w", HookTopic(h.event), err)
	}
	return decide(res)
}

// Quiet says the event would reach nobody: the bus is in this process
// and no peer listens on the event's topic. The pipeline then allows the
// event without calling Handle.
func (h *busHook) Quiet(plugins.Event) bool {
	l, ok := h.b.(listened)
	return ok && !l.Listened(HookTopic(h.event))
}

// listened is a bus that can tell whether a message on a topic would reach
// anyone (bus.Memory).
type listened interface{ Listened(topic string) bool }

// decide walks the acks in the order the bus called the peers.
func decide(res bus.Result) (plugins.Decision, error) {
	d := plugins.Decision{Action: plugins.Allow}
	var contexts, failures []string
	answered := 0
	for _, a := range res.Acks {
		if a.Error != "" {
			failures = append(failures, a.Subscriber+": "+a.Error)
			continue
		}
		answered++
		var r hookResult
		if !ackObject(a, &r) {
			continue
		}
		if r.Context != "" {
			contexts = append(contexts, r.Context)
		}
		switch strings.ToLower(string(r.Action)) {
		case string(plugins.Block):
			if d.Action != plugins.Block {
				reason := strings.TrimSpace(r.Reason)
				if reason == "" {
					reason = "blocked (the peer gave no reason)"
				}
				d.Action, d.Reason, d.Args, d.Text = plugins.Block, a.Subscriber+": "+reason, nil, ""
			}
		case string(plugins.Modify):
			if d.Action == plugins.Block {
				continue
			}
			switch {
			case r.Args != nil:
				d.Action, d.Args = plugins.Modify, r.Args
			case r.Text != "":
				d.Action, d.Text = plugins.Modify, r.Text
			}
		}
	}
	d.Context = strings.Join(contexts, "\n\n")
	if answered == 0 && len(failures) > 0 {
		return plugins.Decision{}, fmt.Errorf("every bus peer failed: %s", strings.Join(failures, "; "))
	}
	return d, nil
}

// ackObject reads an ack's result object into v: the result field, else a
// message that holds a JSON object.
func ackObject(a bus.Ack, v any) bool {
	if len(a.Result) > 0 && json.Unmarshal(a.Result, v) == nil {
		return true
	}
	m := strings.TrimSpace(a.Message)
	return strings.HasPrefix(m, "{") && json.Unmarshal([]byte(m), v) == nil
}

// AgentTopic is the topic agent name answers on.
func AgentTopic(name string) string { return "agent:" + strings.ToLower(name) }

// AgentRequestType is payload.type of a delegation request.
const AgentRequestType = "agent.request"

// AgentRequest is a delegation request's payload (payload.type
// AgentRequestType).
type AgentRequest struct {
	Type      string   `json:"type"`
	Prompt    string   `json:"prompt"`
	From      []string `json:"from,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
}

// agentResult is an agent's answer in an ack.
type agentResult struct {
	Output *string `json:"output"`
	Error  string  `json:"error"`
}

// Delegator carries out task delegation as a bus Request on
// agent:<name>: whoever is subscribed there (a built-in agent served by
// ServeAgents, or a peer) answers.
type Delegator struct {
	Bus bus.Bus
}

// Delegate asks agent to do prompt on behalf of caller.
func (d Delegator) Delegate(ctx context.Context, caller tools.Caller, session, agent, prompt string) (string, error) {
	return RequestAgent(ctx, d.Bus, agent, AgentRequest{Type: AgentRequestType, Prompt: prompt, From: caller.Path(), SessionID: session}, caller.Role())
}

// RequestAgent sends p as a Request on agent's topic, as sender, and reads
// the answer from the first processed ack. An agent that answers it could
// not do the work is an *AgentError.
func RequestAgent(ctx context.Context, b bus.Bus, agent string, p AgentRequest, sender string) (string, error) {
	topic := AgentTopic(agent)
	payload, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode request to %s: %w", topic, err)
	}
	res, err := b.Request(ctx, bus.Message{Topic: topic, Payload: payload, Headers: map[string]string{"sender": sender}})
	if err != nil {
		return "", fmt.Errorf("delegate to %s: %w", agent, err)
	}
	if res.Delivered == 0 {
		return "", fmt.Errorf("no agent answers on %s: nothing on the bus is subscribed to it (weave agents list shows the agents)", topic)
	}
	var why []string
	for _, a := range res.Acks {
		if !a.Processed {
			switch {
			case a.Error != "":
				why = append(why, a.Subscriber+": "+a.Error)
			case a.Message != "":
				why = append(why, a.Subscriber+": "+a.Message)
			}
			continue
		}
		var r agentResult
		if ackObject(a, &r) && (r.Output != nil || r.Error != "") {
			if r.Error != "" {
				return "", &AgentError{Agent: agent, Subscriber: a.Subscriber, Message: r.Error}
			}
			return *r.Output, nil
		}
		return a.Message, nil
	}
	if len(why) == 0 {
		return "", fmt.Errorf("no agent on %s processed the request", topic)
	}
	return "", fmt.Errorf("no agent on %s processed the request: %s", topic, strings.Join(why, "; "))
}

// AgentError is an agent's answer that it could not do the work.
type AgentError struct {
	// Agent is the agent asked, Subscriber the one that answered, Message
	// what it said went wrong.
	Agent, Subscriber, Message string
}

func (e *AgentError) Error() string {
	return fmt.Sprintf("%s (%s): %s", e.Agent, e.Subscriber, e.Message)
}

var _ tools.Delegator = Delegator{}

// AgentTimeout bounds one delegated request to a built-in agent served
// on the bus: agents work for minutes, not for the bus's default 30s.
const AgentTimeout = 30 * time.Minute

// ServeAgents subscribes the agent of each of roles (known to sup as
// agents.AgentID(role), as the host registers its built-ins) to agent:<role>, so that
// delegation and outside peers reach it. A request's "from" chain becomes
// the caller, so the capability ceiling holds through the bus: services
// gets Caller{Agent: from's last}.Delegated(role), or Caller{Agent: role}
// with no chain, and returns the host services the agent works with in the
// request's session ("" when it names none). The returned func
// unsubscribes them.
func ServeAgents(ctx context.Context, b bus.Bus, sup *supervisor.Supervisor, roles []string, services func(c tools.Caller, session string) plugins.Host) (func() error, error) {
	var subs []bus.Subscription
	stop := func() error {
		var errs []error
		for _, s := range subs {
			errs = append(errs, s.Unsubscribe())
		}
		return errors.Join(errs...)
	}
	for _, role := range roles {
		agent := sup.Agent(agents.AgentID(role))
		h := agentHandler(role, agent, services)
		s, err := b.Subscribe(ctx, AgentTopic(role), h, bus.SubscribeOptions{Name: "weave." + role, Timeout: AgentTimeout})
		if err != nil {
			_ = stop()
			return nil, fmt.Errorf("serve agent %s on the bus: %w", role, err)
		}
		subs = append(subs, s)
	}
	return stop, nil
}

// ToolServices returns services for ServeAgents: each agent's tool
// calls go through tools (the capability gate, then the tool hooks) as the
// caller the request named, in the session it named (a delegation's child
// session), else in session.
func ToolServices(t *tools.Tools, session string, logger *slog.Logger) func(c tools.Caller, session string) plugins.Host {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return func(c tools.Caller, requested string) plugins.Host {
		s := session
		if requested != "" {
			s = requested
		}
		return t.Services(c, s, tools.Scope{}, logger.With("agent", c.Role()))
	}
}

func agentHandler(role string, agent plugins.Agent, services func(c tools.Caller, session string) plugins.Host) bus.Handler {
	return func(ctx context.Context, m bus.Message) (bus.Ack, error) {
		var p AgentRequest
		if err := json.Unmarshal(m.Payload, &p); err != nil || strings.TrimSpace(p.Prompt) == "" {
			return bus.Ack{Processed: false, StopPropagation: true, Message: fmt.Sprintf(`%s needs a payload {"type": %q, "prompt": "..."}`, role, AgentRequestType)}, nil
		}
		caller := tools.Caller{Agent: role}
		if len(p.From) > 0 {
			caller = tools.Caller{Agent: p.From[len(p.From)-1], Chain: p.From}.Delegated(role)
		}
		resp, err := agent.Handle(ctx, services(caller, p.SessionID), plugins.AgentRequest{SessionID: p.SessionID, Prompt: p.Prompt})
		if err != nil {
			return bus.Ack{}, fmt.Errorf("%s: %w", role, err)
		}
		result, _ := json.Marshal(map[string]any{"output": resp.Output, "done": resp.Done, "error": resp.Error})
		msg := resp.Output
		if resp.Error != "" {
			msg = string(result)
		}
		return bus.Ack{Processed: true, StopPropagation: true, Message: msg, Result: result}, nil
	}
}

// LoopInfo is the loop state `weave status` shows.
type LoopInfo struct {
	// Bus is the bus it was read from.
	Bus string `json:"bus"`
	// Event is the last event on loop:current; nil when there is none.
	Event *loop.Event `json:"event,omitempty"`
	Stale bool        `json:"stale,omitempty"`
}

// LoopStatus reads loop:current from the bus named by url (or config
// bus.url, or $WEAVE_BUS_URL; see URL) for `weave status`. The embedded
// memory bus lives only inside the process that runs a plan, so without a
// bus URL there is nothing to read: LoopStatus returns nil and no error.
// A nats:// bus is read directly; a ws:// bus through the admin routes of
// `weave bus serve`.
func LoopStatus(ctx context.Context, cfg *config.Config, url string, now time.Time) (*LoopInfo, error) {
	url = URL(cfg, url)
	if url == "" {
		return nil, nil
	}
	b, closeBus, err := Open(ctx, cfg, url)
	if err != nil {
		return nil, err
	}
	defer closeBus()
	e, stale, err := run.LoopState(ctx, b, now)
	if err != nil {
		return nil, fmt.Errorf("loop state on %s: %w", natsbus.Redact(url), err)
	}
	return &LoopInfo{Bus: natsbus.Redact(url), Event: e, Stale: stale}, nil
}
