package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/jwz"
	"github.com/weavehq/weave/bus/natsbus"
	"github.com/weavehq/weave/bus/workers"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/busface"
	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/host/mcp"
	"github.com/weavehq/weave/host/remote"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/host/supervisor"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/plugins"
)

// Host is a running weave: the parts a command works with, opened once by
// Open and closed once by Close. What a command does not ask for (the bus,
// the hooks) is not opened.
type Host struct {
	project string
	cfg     *config.Config
	logger  *slog.Logger
	verbose bool
	skip    []int
	notice  func(string) // the tools' messages for the person; nil: the log only

	sup      *supervisor.Supervisor
	procs    *proc.Set
	gate     *tools.Gate
	bus      bus.Bus
	hooks    []hooks.Registered
	hookOpts hooks.Options
	pipeline *hooks.Pipeline
	tools    *tools.Tools
	model    *chat.Door
	// budget keeps what the models cost against the budgets (money.go).
	budget *budget.Ledger
	// guide is what files tell the agents (instructions.go).
	guide guidance
	mcp   *mcp.Manager

	// guardDown records the first failure of a hook whose failure policy
	// is closed; a run stops on it.
	guardDown guardFailure

	closeOnce sync.Once
	closeErr  error
	// closers run in reverse order on Close.
	closers []func(ctx context.Context) error
}

// Option chooses what Open opens beyond the configuration, the plugin
// supervisor and the capability gate.
type Option func(*openOptions)

type openOptions struct {
	logger  *slog.Logger
	bus     bool
	busURL  string
	hooks   bool
	tools   bool
	getenv  func(string) string
	verbose bool
	skip    []int
	asker   tools.Asker
	// askBus puts permission questions on the bus, waiting askTimeout.
	askBus     bool
	askTimeout time.Duration
	notice     func(string)
}

// WithBusAsker puts the permission questions of tool calls on the bus
// (ask:<session>, busface.Asker), each waiting at most timeout for a
// peer's answer. It opens the bus as WithBus("") does unless WithBus
// names one.
func WithBusAsker(timeout time.Duration) Option {
	return func(o *openOptions) { o.askBus, o.askTimeout, o.bus = true, timeout, true }
}

// WithAsker sets who answers the permission questions of tool calls (the
// person at a terminal, a bus peer); without one, a call that must be
// asked is denied.
func WithAsker(a tools.Asker) Option { return func(o *openOptions) { o.asker = a } }

// WithLogger sets the host log; the default discards.
func WithLogger(l *slog.Logger) Option { return func(o *openOptions) { o.logger = l } }

// WithEnv sets where the model's API key is read (model.api_key_env);
// the default is the process environment.
func WithEnv(getenv func(string) string) Option { return func(o *openOptions) { o.getenv = getenv } }

// WithBus opens the bus: the one at url (or config bus.url, or
// $WEAVE_BUS_URL; see BusURL), else the embedded one.
func WithBus(url string) Option { return func(o *openOptions) { o.bus, o.busURL = true, url } }

// WithVerbose has runs show the plan's template warnings every time, not
// only when they change.
func WithVerbose(v bool) Option { return func(o *openOptions) { o.verbose = v } }

// WithSkip has runs leave the tasks numbered skip unchecked, for a person.
func WithSkip(skip ...int) Option { return func(o *openOptions) { o.skip = skip } }

// WithNotice sets where the tools' messages for the person go (the one
// warning of a run whose bash calls cannot be sandboxed).
func WithNotice(f func(string)) Option { return func(o *openOptions) { o.notice = f } }

// WithHooks gathers every hook of the project: the built-ins, the command
// hooks of config, and the hook plugins, which describe themselves (each is
// started once). With a bus, peers on the bus act as hooks too.
func WithHooks() Option { return func(o *openOptions) { o.hooks = true } }

// WithTools gathers the hooks (as WithHooks), builds the pipeline that runs
// them, and the tools, whose every call passes the capability gate and that
// pipeline. With a bus, delegation goes over the bus.
func WithTools() Option { return func(o *openOptions) { o.hooks, o.tools = true, true } }

// Open opens the host of project (which may be empty outside a project)
// with configuration cfg (nil means the defaults). Close it when done: every
// plugin, the bus and whatever else it started end there.
func Open(ctx context.Context, project string, cfg *config.Config, opts ...Option) (_ *Host, err error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	if cfg == nil {
		cfg = config.Default()
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.getenv == nil {
		o.getenv = os.Getenv
	}
	h := &Host{project: project, cfg: cfg, logger: o.logger, verbose: o.verbose, skip: o.skip, notice: o.notice}
	defer func() {
		if err != nil {
			_ = h.Close(context.WithoutCancel(ctx))
		}
	}()

	if h.sup, err = newProjectSupervisor(project, cfg, o.logger); err != nil {
		return nil, err
	}
	// Every plugin ends with the host, however it ends.
	h.closers = append(h.closers, h.sup.Close)
	// So does every command a hook or a tool call started: Close waits for
	// the kill sequence of each. They are recorded under .weave/run/ for the
	// next start to end if this process is killed outright.
	var ledger *proc.Ledger
	if project != "" {
		ledger = proc.NewLedger(project, layout.NewProject(project).Run())
	}
	h.procs = proc.NewSet(proc.DefaultGrace, ledger)
	h.closers = append(h.closers, h.procs.Close)
	if h.gate, err = tools.NewGate(cfg, o.logger); err != nil {
		return nil, err
	}
	if o.hooks {
		if h.hooks, err = buildHooks(ctx, project, cfg, h.sup, h.procs, o.tools, o.logger); err != nil {
			return nil, err
		}
	}
	if o.bus {
		b, closeBus, err := busface.Open(ctx, cfg, busface.URL(cfg, o.busURL))
		if err != nil {
			return nil, err
		}
		h.bus = b
		h.closers = append(h.closers, func(context.Context) error { return closeBus() })
	}
	if !o.hooks {
		return h, nil
	}
	if h.bus != nil {
		busHooks, err := busface.Hooks(ctx, h.bus, cfg)
		if err != nil {
			return nil, err
		}
		h.hooks = append(h.hooks, busHooks...)
	}
	disabled, err := disabledHooks(project, cfg, h.hooks, h.sup)
	if err != nil {
		return nil, err
	}
	h.hookOpts = hooks.Options{DisabledHooks: disabled, Logger: o.logger, DefaultTimeout: cfg.Hook.Timeout,
		OnFailClosed: h.guardDown.record, MaxReason: cfg.Hook.MaxReasonBytes, MaxContext: cfg.Hook.MaxContextBytes}
	if !o.tools {
		return h, nil
	}
	if h.pipeline, err = hooks.NewPipeline(h.hooks, h.hookOpts); err != nil {
		return nil, err
	}
	h.guide = loadGuidance(project, cfg)
	for _, w := range h.guide.warnings {
		o.logger.Warn(w)
	}
	if h.mcp, err = h.openMCP(ctx); err != nil {
		return nil, err
	}
	var extra func(session, agent string) []plugins.ToolSpec
	if h.mcp != nil {
		extra = mcpTools(h.mcp, h.gate)
	}
	h.budget = budget.New(cfg.Budget.Run)
	h.model = chat.New(chat.Options{Project: project, Config: cfg, Pipeline: h.pipeline, Bus: h.bus, Logger: o.logger, Getenv: o.getenv,
		Plans: h.planSnapshot, System: h.systemFor, Tools: extra, Budget: h.budget})
	if o.askBus {
		o.asker = busface.Asker{Bus: h.bus, Timeout: o.askTimeout}
	}
	if h.tools, err = h.newTools(o.asker); err != nil {
		return nil, err
	}
	return h, nil
}

// newTools builds the tools of the host, tied to its delegation: over the
// bus when there is one (the agents answer on agent:<role> while a run
// serves them), else straight to the agent plugins.
func (h *Host) newTools(asker tools.Asker) (*tools.Tools, error) {
	delegation := tools.WithAgents(func(role string) plugins.Agent { return h.sup.Agent(agents.AgentID(role)) })
	if h.bus != nil {
		delegation = tools.WithDelegator(busface.Delegator{Bus: h.bus})
	}
	opts := []tools.Option{tools.WithLogger(h.logger), tools.WithProcs(h.procs), delegation, tools.WithEventFunc(h.denied),
		tools.WithModel(h.model.ModelFunc), tools.WithSessionLinks(h.model.Link), tools.WithWatch(h.model.WatchTool),
		tools.WithSkills(h.guide.skills), tools.WithAsker(asker), tools.WithNotice(h.notice)}
	if h.mcp != nil {
		opts = append(opts, tools.WithMCP(h.mcp))
	}
	return tools.New(h.project, h.cfg, h.gate, h.pipeline, opts...)
}

// Close stops everything the host started, in the reverse order of its
// start, within a grace period; it is safe to call more than once.
func (h *Host) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var errs []error
		for _, c := range slices.Backward(h.closers) {
			errs = append(errs, c(ctx))
		}
		h.closeErr = errors.Join(errs...)
	})
	return h.closeErr
}

// Project is the project root ("" outside a project).
func (h *Host) Project() string { return h.project }

// Config is the configuration the host runs with.
func (h *Host) Config() *config.Config { return h.cfg }

// Logger is the host log.
func (h *Host) Logger() *slog.Logger { return h.logger }

// Supervisor holds every plugin of the project, built-ins included.
func (h *Host) Supervisor() *supervisor.Supervisor { return h.sup }

// Gate is the capability gate.
func (h *Host) Gate() *tools.Gate { return h.gate }

// Bus is the bus; nil unless opened WithBus.
func (h *Host) Bus() bus.Bus { return h.bus }

// Hooks are every hook of the project, disabled ones included, and the
// options the pipeline runs them with; nil unless opened WithHooks.
func (h *Host) Hooks() ([]hooks.Registered, hooks.Options) { return h.hooks, h.hookOpts }

// Pipeline runs the hooks; nil unless opened WithTools.
func (h *Host) Pipeline() *hooks.Pipeline { return h.pipeline }

// Tools is the one door every tool call passes; nil unless opened
// WithTools.
func (h *Host) Tools() *tools.Tools { return h.tools }

// StartWork runs the start-work journey on the plan called name (empty: the
// decision procedure; see run.StartWork), with observe receiving its events.
// The host must be opened WithTools; with a bus, the run's progress goes on
// it as loop events and the agents answer delegation there.
func (h *Host) StartWork(ctx context.Context, name string, observe run.Observer) (run.Result, error) {
	return h.StartWorkIn(ctx, "", name, observe)
}

// StartWorkIn is StartWork in session (empty: a new one): a chat hands its
// session to Tapestry, so state.json names it as the plan's, Tapestry's
// conversation goes to its transcript, and the person's messages there
// count as theirs for the work-continuation hook.
func (h *Host) StartWorkIn(ctx context.Context, session, name string, observe run.Observer) (run.Result, error) {
	if h.tools == nil {
		return run.Result{}, errors.New("start work: the host was opened without its tools (host.WithTools)")
	}
	// The hooks every run calls start now, in the background, while the
	// run takes its lock and reads its plan; the agents start once the
	// plan says which ones its tasks need (run.Options.Warm).
	var warm []string
	for _, r := range h.pipeline.Hooks() {
		if r.Source == "builtin" && warmsForRun(r) {
			warm = append(warm, r.Info.Name)
		}
	}
	go h.sup.Warm(ctx, warm...)
	if observe != nil {
		stop := h.ObserveModel(func(ev chat.Event) {
			switch ev.Type {
			case chat.ModelDelta:
				observe(run.Event{Type: run.EventModelDelta, Time: time.Now(), Agent: ev.Agent, Output: ev.Text})
			case chat.ModelToolCall:
				observe(run.Event{Type: run.EventModelToolCall, Time: time.Now(), Agent: ev.Agent, Tool: ev.Tool})
			case chat.ModelUsage:
				observe(run.Event{Type: run.EventModelUsage, Time: time.Now(), Agent: ev.Agent, Usage: ev.Usage, CostUSD: ev.CostUSD})
			case chat.ModelRetry:
				// The text streamed before is void; the view says why.
				observe(run.Event{Type: run.EventWarning, Time: time.Now(), Agent: ev.Agent, Reason: ev.Agent + ": " + ev.Error})
			case chat.ModelFallback:
				if ev.Fallback != nil {
					// The run's events carry the door's own type:
					// Reason says the switch, Output the failure.
					observe(run.Event{Type: chat.ModelFallback, Time: time.Now(), Agent: ev.Agent, Reason: ev.Fallback.Line(), Output: ev.Error})
				}
			case chat.ModelCompacting:
				if ev.Compaction != nil {
					observe(run.Event{Type: run.EventModelCompacting, Time: time.Now(), Agent: ev.Agent, Output: ev.Compaction.StartLine()})
				}
			case chat.ModelCompacted:
				if ev.Compaction != nil {
					observe(run.Event{Type: run.EventModelCompacted, Time: time.Now(), Agent: ev.Agent, Output: ev.Compaction.Line()})
				}
			}
		})
		defer stop()
	}
	o := run.Options{
		Project: h.project,
		Name:    name,
		Session: session,
		Config:  h.cfg,
		Agent:   h.sup.Agent(agents.AgentID(agents.Tapestry)),
		Route:   h.categoryRoute,
		Warm: func(roles ...string) {
			ids := make([]string, len(roles))
			for i, role := range roles {
				ids[i] = agents.AgentID(role)
			}
			go h.sup.Warm(ctx, ids...)
		},
		Hooks:   h.pipeline,
		Tools:   h.tools,
		Logger:  h.logger,
		Observe: observe,
		Halted:  h.guardDown.err,
		Verbose: h.verbose,
		Skip:    h.skip,
		Budget:  h.budget,
		History: func(_ context.Context, session, agent string) ([]plugins.ChatMessage, error) {
			return h.model.History(session, agent)
		},
	}
	if h.cfg.Review.OnComplete {
		o.Review = h.reviewFinished
	}
	var loopOpts []run.LoopOption
	if h.cfg.Loop.JWZ {
		role := "loop"
		loopOpts = append(loopOpts, run.LoopToJWZ(jwz.NewWriter(h.project, &jwz.Sender{ID: "weave", Name: "weave", Role: &role})))
	}
	if h.bus == nil && len(loopOpts) > 0 {
		o.Observe = run.LoopObserver(ctx, nil, h.project, h.logger, observe, loopOpts...)
	}
	if h.bus != nil {
		o.Observe = run.LoopObserver(ctx, h.bus, h.project, h.logger, observe, loopOpts...)
		o.ServeAgents = func(ctx context.Context, session string) (func() error, error) {
			return busface.ServeAgents(ctx, h.bus, h.sup, h.gate.Names(), busface.ToolServices(h.tools, session, h.logger))
		}
	}
	if nb, ok := h.bus.(*natsbus.Bus); ok {
		// The awards, renewals and losses come from the pool's goroutines:
		// they and the run's events reach the observer one at a time.
		var mu sync.Mutex
		inner := o.Observe
		o.Observe = func(ev run.Event) {
			mu.Lock()
			defer mu.Unlock()
			if inner != nil {
				inner(ev)
			}
		}
		emit := o.Observe
		var pool *remote.Pool
		var poolRepo *gitwork.Repo
		o.Pool = func(ctx context.Context, plan string, repo *gitwork.Repo, local []run.Worker) ([]run.Worker, error) {
			var err error
			poolRepo = repo
			ro := remote.Options{Run: plan, Lease: h.cfg.Run.Lease, Logger: h.logger, Budget: h.budget}
			if ro.Remote = h.cfg.Run.Remote; ro.Remote != "" {
				if ro.RemoteURL, err = remote.GitRemoteURL(ctx, repo, ro.Remote); err != nil {
					return nil, err
				}
			}
			ro.Events = func(e workers.Event) {
				if ev, ok := remote.RunEvent(plan, e); ok {
					emit(ev)
				}
			}
			pool, err = remote.NewPool(ctx, nb, repo, "coordinator-"+remote.IDToken(plan), local, ro)
			if err != nil {
				return nil, err
			}
			return pool.Workers(), nil
		}
		defer func() {
			if pool != nil {
				_ = pool.Close()
			}
			// The git process that moved the results' branches ends
			// with the run.
			if poolRepo != nil {
				_ = poolRepo.Close()
			}
		}()
	}
	return run.StartWork(ctx, o)
}

// ObserveModel calls f with what every model call of this host streams
// until stop is called (see chat.Door.Observe); nothing unless the host is
// opened WithTools.
func (h *Host) ObserveModel(f func(chat.Event)) (stop func()) {
	if h.model == nil {
		return func() {}
	}
	return h.model.Observe(f)
}

// Compact summarises agent's conversation in session now (the chat's
// /compact; see chat.Door.Compact). The host must be opened WithTools.
func (h *Host) Compact(ctx context.Context, session, agent string) error {
	if h.model == nil {
		return errors.New("compact: the host was opened without its tools (host.WithTools)")
	}
	return h.model.Compact(ctx, session, agent)
}

// Ask has the agent of role handle prompt in session, as the person's
// request: the agent's tools pass the gate as that role, and its model
// calls stream to ObserveModel's observers. A session the agent has
// spoken in before is continued: the agent gets its conversation there so
// far (from this host's memory, or from the session's transcript under
// .weave/sessions/ when resuming). The host must be opened WithTools.
func (h *Host) Ask(ctx context.Context, role, session, prompt string) (plugins.AgentResponse, error) {
	if h.tools == nil {
		return plugins.AgentResponse{}, errors.New("ask: the host was opened without its tools (host.WithTools)")
	}
	r, ok := h.gate.Role(role)
	if !ok {
		return plugins.AgentResponse{}, fmt.Errorf("no agent %q (have %s)", role, strings.Join(h.gate.Names(), ", "))
	}
	history, err := h.model.History(session, r.Name)
	if err != nil {
		return plugins.AgentResponse{}, fmt.Errorf("ask %s: %w", r.Name, err)
	}
	caller := tools.Caller{Agent: r.Name}
	services := h.tools.Services(caller, session, tools.Scope{}, h.logger.With("agent", r.Name, "session", session))
	return h.sup.Agent(agents.AgentID(r.Name)).Handle(ctx, services,
		plugins.AgentRequest{SessionID: session, Prompt: prompt, History: history})
}

// UserMessage tells the hooks that the person wrote text to agent in
// session now, ahead of the turn that will carry it (see
// chat.Door.UserMessage); nothing unless the host is opened WithTools.
func (h *Host) UserMessage(ctx context.Context, session, agent, text string) error {
	if h.model == nil {
		return nil
	}
	return h.model.UserMessage(ctx, session, agent, text)
}

// planSnapshot reads the active plan and session's checklist through the
// tools, the door the agents use.
func (h *Host) planSnapshot(session string) chat.PlanSnapshot {
	var s chat.PlanSnapshot
	if h.tools == nil {
		return s
	}
	if p, err := h.tools.Progress(""); err == nil && p.Total > 0 {
		s.Plan = &p
	}
	s.Todos = h.tools.Todos(session)
	return s
}

// DeniedTopic is where a host publishes the tool calls it refused.
const DeniedTopic = "system:tool.denied"

// denied makes a refused tool call visible: in the host log, and on the bus
// (system:tool.denied) for whoever watches it.
func (h *Host) denied(ev plugins.Event) {
	h.logger.Warn("tool call denied", "agent", ev.Agent, "tool", ev.Tool, "data", ev.Data)
	if h.bus == nil {
		return
	}
	payload, err := json.Marshal(struct {
		Type  string        `json:"type"`
		Event plugins.Event `json:"event"`
	}{tools.EventToolDenied, ev})
	if err != nil {
		return
	}
	if _, err := h.bus.Publish(context.Background(), bus.Message{Topic: DeniedTopic, Payload: payload}); err != nil {
		h.logger.Warn("publish the denial", "err", fmt.Errorf("%s: %w", DeniedTopic, err))
	}
}

// guardFailure is the first failure of a hook whose failure policy is
// closed. Such a hook may be a guard: what it guards must not go on without
// it, so the run stops, saying which hook, why, and how to turn it off.
type guardFailure struct {
	mu    sync.Mutex
	first error
}

func (g *guardFailure) record(ev plugins.Event, rep hooks.Report) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.first != nil {
		return
	}
	g.first = fmt.Errorf("hook %s failed on %s and its failure policy is closed, so the run stops (fix it, or turn it off with disabled_hooks: [%s] in .weave/config.yaml): %s",
		rep.Hook, ev.Name, rep.Hook, rep.Error)
}

func (g *guardFailure) err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.first
}
