package chat

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

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

// Model event types, as observers, `--json` and the bus see them.
const (
	// ModelDelta carries a piece of the model's text as it arrives.
	ModelDelta = "model.delta"
	// ModelToolCall says the model began a tool call (its name and id).
	ModelToolCall = "model.tool_call"
	// ModelUsage ends a model call with its token use.
	ModelUsage = "model.usage"
	// ModelRetry says the model's stream was cut and the call is asked
	// again (why, in Error): the text streamed before it is void.
	ModelRetry = "model.retry"
)

// Event is one thing a model call did, streamed as it happens.
type Event struct {
	Type    string         `json:"type"`
	Session string         `json:"session,omitempty"`
	Agent   string         `json:"agent,omitempty"`
	Text    string         `json:"text,omitempty"`
	Tool    string         `json:"tool,omitempty"`
	ToolID  string         `json:"tool_id,omitempty"`
	Usage   *plugins.Usage `json:"usage,omitempty"`
	// ContextWindow is the model's window, on model.usage.
	ContextWindow int `json:"context_window,omitempty"`
	// CostUSD is what the call cost in US dollars, on model.usage and
	// model.compacted; absent when its model's price is unknown.
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// Args shows a tool call's arguments briefly, on tool.start and
	// tool.result; the result's size (bytes), whether it was denied or
	// failed, and why, are on tool.result.
	Args    string `json:"args,omitempty"`
	Size    int    `json:"size,omitempty"`
	Denied  bool   `json:"denied,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	Error   string `json:"error,omitempty"`
	// Compaction says how a conversation was compacted, on
	// model.compacted (whose Usage is the summary's call).
	Compaction *Compaction `json:"compaction,omitempty"`
	// Fallback says which model a call left for which, and why, on
	// model.fallback (Error is the failure).
	Fallback *Fallback `json:"fallback,omitempty"`
}

// Options are what a Door is built from: it reaches nothing else.
type Options struct {
	// Project is the project root; "" outside a project (no transcript).
	Project string
	// Config chooses the model, its window and the compact ratio; nil
	// means the defaults.
	Config *config.Config
	// Pipeline runs chat.message and session.compacting/compacted hooks;
	// nil runs none.
	Pipeline *hooks.Pipeline
	// Bus receives the model events (bus.ModelTopic) and compaction anchors;
	// nil publishes nothing.
	Bus    bus.Bus
	Logger *slog.Logger
	// Getenv reads the model's API key (model.api_key_env); nil means
	// the process environment.
	Getenv func(string) string
	// Plans gives the work state of a session that a compaction's summary
	// carries; nil: none.
	Plans func(session string) PlanSnapshot
	// System gives what is added to an agent's system prompt in every
	// call (the project's instructions and skills); nil adds nothing. ctx
	// is the call's: a task working on other code than the project's (a
	// worker's) says so there.
	System func(ctx context.Context, agent string) string
	// Tools gives the tools the host offers an agent beside those it asks
	// for (the MCP servers' it may use), added to each of its calls; nil:
	// none.
	Tools func(session, agent string) []plugins.ToolSpec
	// Budget, when set, is told each call's worst case before it (and
	// refuses the calls that could cross a budget) and its cost after;
	// nil: calls are priced, never refused.
	Budget *budget.Ledger
}

// Door is the model door: every model call of the host passes it. It
// answers the agents' chats with the configured provider, streams what the
// model says to the observers and the bus (bus.ModelTopic), fires chat.message
// for each user message (before the call: hooks may modify, block or add
// context) and for each answer (after: with tokens_used and context_window,
// so the context-window monitor sees real use), records the session's
// transcript (.weave/sessions/<id>.jsonl), carries the context hooks add
// after an answer into the session's next call, and compacts conversations
// that near the context window (compact.go).
type Door struct {
	// set is the models config names; a call's model picks one.
	set     *model.Set
	project string
	// ratio is the share of a model's window at which a conversation is
	// compacted before its next call.
	ratio float64
	// fallback are the fallback chains; stuck names, by session and
	// agent, the model a conversation fell back to (fallback.go).
	fallback fallbacks
	stuck    map[[2]string]string
	pipeline *hooks.Pipeline
	bus      bus.Bus
	logger   *slog.Logger
	sessions *sessionLog
	// plans reads the work state a summary carries; nil: none.
	plans func(session string) PlanSnapshot
	// system adds to an agent's system prompt; nil: nothing.
	system func(ctx context.Context, agent string) string
	// models holds, by session, the model a turn was told to use
	// (UseModel).
	models map[string]string
	// extra gives the host's tools for an agent (Options.Tools); nil: none.
	extra func(session, agent string) []plugins.ToolSpec
	// price prices the calls (cost.go).
	price pricing

	mu        sync.Mutex
	observers map[int]func(Event)
	nextObs   int
	// pending holds context for a session's next call.
	pending map[string][]string
	// announced holds, per session, the person's messages the hooks heard
	// through UserMessage before the turn that carries them: that turn's
	// chat.message says so (data "announced"), so that a hook that acts
	// once per prompt (UserPromptSubmit) does not act twice.
	announced map[string][]string
	// convs holds each agent's conversation by session and agent.
	convs map[[2]string]*conversation
	// idle is signalled, with mu, when a conversation has no call in
	// flight.
	idle *sync.Cond
}

// New builds the door from o.
func New(o Options) *Door {
	cfg := o.Config
	if cfg == nil {
		cfg = config.Default()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	d := &Door{project: o.Project, pipeline: o.Pipeline, bus: o.Bus, logger: o.Logger, sessions: newSessionLog(o.Project), plans: o.Plans, system: o.System, extra: o.Tools,
		observers: map[int]func(Event){}, pending: map[string][]string{}, announced: map[string][]string{}, convs: map[[2]string]*conversation{},
		stuck: map[[2]string]string{}, fallback: newFallbacks(cfg)}
	d.idle = sync.NewCond(&d.mu)
	d.price = newPricing(cfg)
	d.set = model.OpenSet(cfg, o.Getenv)
	if o.Budget != nil {
		// Every model a call may go to, fallbacks included, is held to
		// the budgets, each priced as its vendor counts tokens.
		d.set = d.set.WrapRoutes(func(r model.Route, p model.Provider) model.Provider {
			return withBudget(p, o.Budget, d.price.forRoute(r))
		})
	}
	// The ratio is the context-window monitor's, defaults included.
	d.ratio = hooks.NewContextWindowMonitor(cfg.ContextWindow.WarnRatio, cfg.ContextWindow.CompactRatio).CompactRatio()
	return d
}

// windowOf is the context window of the model agent's calls naming name
// go to in session: the one it fell back to, if it did.
func (d *Door) windowOf(session, agent, name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.windowLocked(session, agent, name)
}

// windowLocked is windowOf with d.mu held.
func (d *Door) windowLocked(session, agent, name string) int {
	if stuck := d.stuck[[2]string{session, agent}]; stuck != "" {
		if r, ok := d.set.Entry(stuck); ok {
			return r.Window
		}
	}
	return d.set.Route(name).Window
}

// compactAtLocked is the token count at which agent's conversation in
// session, with the model name, is compacted before its next call; d.mu
// is held.
func (d *Door) compactAtLocked(session, agent, name string) int64 {
	return int64(d.ratio * float64(d.windowLocked(session, agent, name)))
}

// Observe calls f with what every model call streams (text deltas,
// tool-call starts, tool activity, usage, compactions) until stop is
// called. f must not block for long: the model call waits for it.
func (d *Door) Observe(f func(Event)) (stop func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.nextObs
	d.nextObs++
	d.observers[id] = f
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.observers, id)
	}
}

// emit hands ev to the observers, in the caller's goroutine, then
// publishes it on the session's bus.ModelTopic.
func (d *Door) emit(ctx context.Context, ev Event) {
	d.mu.Lock()
	obs := make([]func(Event), 0, len(d.observers))
	for _, f := range d.observers {
		obs = append(obs, f)
	}
	d.mu.Unlock()
	for _, f := range obs {
		f(ev)
	}
	if d.bus == nil || ev.Session == "" {
		return
	}
	if l, ok := d.bus.(listened); ok && !l.Listened(bus.ModelTopic(ev.Session)) {
		// A bus in this process that nobody listens to on the session's
		// topic (start-work's own): the event is not encoded for nobody,
		// twice per tool call.
		return
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return
	}
	if _, err := d.bus.Publish(context.WithoutCancel(ctx), bus.Message{Topic: bus.ModelTopic(ev.Session), Payload: payload}); err != nil {
		d.logger.Debug("publish model event", "err", err)
	}
}

// listened is a bus that can tell whether a message on a topic would
// reach anyone (bus.Memory).
type listened interface{ Listened(topic string) bool }

// UseModel has session's calls use model until restore is called (a
// command file's model: front matter).
func (d *Door) UseModel(session, model string) (restore func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.models == nil {
		d.models = map[string]string{}
	}
	prev := d.models[session]
	d.models[session] = model
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if prev == "" {
			delete(d.models, session)
		} else {
			d.models[session] = prev
		}
	}
}

// ModelFunc is the tools.ModelFunc of the host: agent's model calls in
// session, through Complete.
func (d *Door) ModelFunc(session, agent string) func(context.Context, plugins.ChatRequest) (plugins.ChatResponse, error) {
	return func(ctx context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error) {
		return d.Complete(ctx, session, agent, req)
	}
}

// turn is one model call on its way through the door.
type turn struct {
	session, agent string
	// req is the call as the agent made it, its newest message as the
	// chat.message hooks left it. Its Messages are the conversation as the
	// agent holds it, without this call's reminders.
	req plugins.ChatRequest
	// add is the context hooks gave for this call: a reminder beside the
	// newest message, for this call only.
	add  []string
	conv *conversation
	t    *thread
	// sent is the list the model got last: the summary in place of what
	// a compaction replaced.
	sent []plugins.ChatMessage
	// partial is what the model wrote so far in the current call.
	partial strings.Builder
}

// Complete is one model call of agent in session, in four phases:
//
//   - before: chat.message hooks on the newest user message (they may
//     modify it, block the call, or add context);
//   - thread: the agent's conversation and the thread of this message list,
//     compacted first when a compaction is due;
//   - call: the provider, its deltas streamed; compacted and tried once
//     more when the chat is too long for the window;
//   - after: the conversation and the transcript updated, model.usage
//     streamed, chat.message hooks on the answer.
func (d *Door) Complete(ctx context.Context, session, agent string, req plugins.ChatRequest) (plugins.ChatResponse, error) {
	if r := d.set.Route(req.Model); r.Err != nil {
		return plugins.ChatResponse{}, r.Err
	}
	if d.extra != nil {
		if more := d.extra(session, agent); len(more) > 0 {
			req.Tools = append(slices.Clip(req.Tools), more...)
		}
	}
	tn := &turn{session: session, agent: agent, req: req}
	if err := d.before(ctx, tn); err != nil {
		return plugins.ChatResponse{}, err
	}
	release := d.thread(ctx, tn)
	defer release()
	resp, err := d.call(ctx, tn)
	return d.after(ctx, tn, resp, err)
}

// before takes the context hooks left for the session's next call and
// fires chat.message on the newest message when it is the user's.
func (d *Door) before(ctx context.Context, tn *turn) error {
	tn.req.Messages = append([]plugins.ChatMessage(nil), tn.req.Messages...)
	d.mu.Lock()
	tn.add, d.pending[tn.session] = d.pending[tn.session], nil
	d.mu.Unlock()
	msgs := tn.req.Messages
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != plugins.RoleUser {
		return nil
	}
	data := map[string]any{"source": tools.MessageSource(ctx)}
	if d.wasAnnounced(tn.session, msgs[n-1].Content) {
		data["announced"] = true
	}
	out, err := d.fire(ctx, plugins.Event{Name: plugins.EventChatMessage, SessionID: tn.session, Agent: tn.agent, Time: time.Now(),
		Message: msgs[n-1].Content, Cwd: d.project, Data: data})
	if err != nil {
		return err
	}
	if out.Blocked() {
		return fmt.Errorf("the message was blocked by a hook: %s", out.Reason)
	}
	if out.Action == plugins.Modify && out.Text != "" {
		msgs[n-1].Content = out.Text
	}
	tn.add = append(tn.add, out.Context...)
	return nil
}

// thread finds the agent's conversation and the thread of the call's
// list, marks a call under way in it, and compacts it when a compaction
// is due. release ends the call's hold on the conversation.
func (d *Door) thread(ctx context.Context, tn *turn) (release func()) {
	key := [2]string{tn.session, tn.agent}
	d.mu.Lock()
	c := d.convs[key]
	if c == nil {
		c = newConversation()
		d.convs[key] = c
	}
	c.busy++
	c.model, c.system, c.tools = tn.req.Model, tn.req.System, tn.req.Tools
	tn.conv, tn.t = c, c.threadFor(tn.req.Messages)
	due := tn.t.due
	release = func() {
		d.mu.Lock()
		c.busy--
		if c.busy == 0 {
			d.idle.Broadcast()
		}
		d.mu.Unlock()
	}
	if due == "" {
		d.mu.Unlock()
		return release
	}
	job := compactJob{trigger: CompactAuto, reason: due, before: c.used}
	d.mu.Unlock()
	if due == reasonRequested {
		job.trigger = CompactManual
	}
	d.compactCall(ctx, tn, job)
	return release
}

// call has the provider answer, streaming its deltas; a chat too long for
// the window is compacted and tried once more.
func (d *Door) call(ctx context.Context, tn *turn) (plugins.ChatResponse, error) {
	resp, err := d.send(ctx, tn)
	if errors.Is(err, model.ErrContextTooLong) && ctx.Err() == nil {
		if d.compactCall(ctx, tn, compactJob{trigger: CompactAuto, reason: reasonContextTooLong}) {
			resp, err = d.send(ctx, tn)
		}
	}
	return resp, err
}

// send is one request to the provider: the thread's list as the model
// gets it, with the call's reminders.
func (d *Door) send(ctx context.Context, tn *turn) (plugins.ChatResponse, error) {
	d.mu.Lock()
	eff := tn.t.effective(tn.req.Messages)
	d.mu.Unlock()
	sent := tn.req
	sent.Messages = eff
	d.mu.Lock()
	if m := d.models[tn.session]; m != "" {
		sent.Model = m
	}
	d.mu.Unlock()
	if d.system != nil {
		if add := d.system(ctx, tn.agent); add != "" {
			sent.System = strings.TrimRight(sent.System, "\n") + "\n\n" + add
		}
	}
	if n := len(eff); n > 0 && len(tn.add) > 0 {
		// Hooks speak to the model as Claude Code's do: a reminder
		// beside the newest message, for this call only.
		sent.Messages = append([]plugins.ChatMessage(nil), eff...)
		sent.Messages[n-1].Content += "\n\n<system-reminder>\n" + strings.Join(tn.add, "\n\n") + "\n</system-reminder>"
	}
	tn.sent = eff
	tn.partial.Reset()
	return d.walk(ctx, tn.session, tn.agent, sent, func(dl model.Delta) {
		if dl.Retry != "" {
			tn.partial.Reset()
			d.emit(ctx, Event{Type: ModelRetry, Session: tn.session, Agent: tn.agent, Error: dl.Retry})
			return
		}
		if dl.Text == "" && dl.ToolCall == nil {
			return
		}
		ev := Event{Type: ModelDelta, Session: tn.session, Agent: tn.agent, Text: dl.Text}
		if dl.ToolCall != nil {
			ev = Event{Type: ModelToolCall, Session: tn.session, Agent: tn.agent, Tool: dl.ToolCall.Tool, ToolID: dl.ToolCall.ID}
		}
		tn.partial.WriteString(dl.Text)
		d.emit(ctx, ev)
	}, tn.partial.Reset)
}

// after settles the call: cut off, failed, or answered.
func (d *Door) after(ctx context.Context, tn *turn, resp plugins.ChatResponse, err error) (plugins.ChatResponse, error) {
	if err != nil && ctx.Err() != nil {
		d.cut(tn)
		return resp, err
	}
	if err != nil {
		d.logger.Warn("model call failed", "agent", tn.agent, "session", tn.session, "err", err)
		return resp, err
	}
	d.answered(ctx, tn, resp)
	return resp, nil
}

// cut keeps a call the person cut off: what was asked and what the model
// wrote so far stay in the conversation, which resumes from there, and in
// the transcript.
func (d *Door) cut(tn *turn) {
	msgs := append([]plugins.ChatMessage(nil), tn.sent...)
	var cut string
	if p := tn.partial.String(); p != "" {
		cut = p + "\n[interrupted]"
		msgs = append(msgs, plugins.ChatMessage{Role: plugins.RoleAssistant, Content: cut})
	}
	d.mu.Lock()
	tn.conv.msgs = msgs
	d.mu.Unlock()
	if err := d.sessions.recordCut(tn.session, tn.agent, tn.req.Messages, cut); err != nil {
		d.logger.Warn("write the session transcript", "session", tn.session, "err", err)
	}
}

// answered records an answer: in the conversation (a compaction falls due
// when it reached the compact ratio), in the transcript, as model.usage,
// and to the chat.message hooks, whose context goes with the session's
// next call.
func (d *Door) answered(ctx context.Context, tn *turn, resp plugins.ChatResponse) {
	u := resp.Usage
	used := u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
	d.mu.Lock()
	tn.conv.msgs = append(append(make([]plugins.ChatMessage, 0, len(tn.sent)+1), tn.sent...), resp.Message)
	tn.conv.used = used
	if at := d.compactAtLocked(tn.session, tn.agent, tn.req.Model); at > 0 && used >= at {
		tn.t.due = reasonRatio
	}
	d.mu.Unlock()
	cost := d.priceFor(tn.req.Model).cost(tn.req.Model, resp).ptr()
	if err := d.sessions.record(tn.session, tn.agent, tn.req, resp, cost); err != nil {
		d.logger.Warn("write the session transcript", "session", tn.session, "err", err)
	}
	window := d.windowOf(tn.session, tn.agent, tn.req.Model)
	d.emit(ctx, Event{Type: ModelUsage, Session: tn.session, Agent: tn.agent, Usage: &u, ContextWindow: window, CostUSD: cost})
	out, err := d.fire(ctx, plugins.Event{Name: plugins.EventChatMessage, SessionID: tn.session, Agent: tn.agent, Time: time.Now(),
		Message: resp.Message.Content, Data: map[string]any{"source": "assistant", "tokens_used": used, "context_window": window}})
	if err != nil {
		d.logger.Warn("chat.message hooks failed after an answer", "err", err)
	} else if len(out.Context) > 0 {
		d.mu.Lock()
		d.pending[tn.session] = append(d.pending[tn.session], out.Context...)
		d.mu.Unlock()
	}
}

// compactCall compacts a call's thread and reports whether it did; a
// compaction that fails leaves the call as it was, and says why in the log.
func (d *Door) compactCall(ctx context.Context, tn *turn, job compactJob) bool {
	job.session, job.agent = tn.session, tn.agent
	if err := tn.conv.lock(ctx); err != nil {
		return false
	}
	defer tn.conv.unlock()
	if err := d.compactThread(ctx, tn.conv, tn.t, tn.req.Messages, tn.req, job); err != nil {
		d.logger.Warn("conversation not compacted", "agent", tn.agent, "session", tn.session, "reason", job.reason, "err", err)
		d.mu.Lock()
		tn.t.due = ""
		d.mu.Unlock()
		return false
	}
	return true
}

// fire runs ev's hooks.
func (d *Door) fire(ctx context.Context, ev plugins.Event) (hooks.Outcome, error) {
	if d.pipeline == nil {
		return hooks.Outcome{}, nil
	}
	out, err := d.pipeline.Run(ctx, ev)
	if err != nil {
		return out, fmt.Errorf("%s hooks: %w", ev.Name, err)
	}
	return out, nil
}

// UserMessage tells the hooks that the person wrote text to agent in
// session now (chat.message with source "user"), ahead of the turn that
// will carry it: a message typed while a plan runs in the session pauses
// the plan's continuation at once. What the hooks answer (added context)
// reaches the model with the message itself, when the turn sends it.
func (d *Door) UserMessage(ctx context.Context, session, agent, text string) error {
	if d.pipeline == nil {
		return nil
	}
	d.mu.Lock()
	d.announced[session] = append(d.announced[session], text)
	d.mu.Unlock()
	_, err := d.pipeline.Run(ctx, plugins.Event{Name: plugins.EventChatMessage, SessionID: session, Agent: agent,
		Cwd: d.project, Time: time.Now(), Message: text, Data: map[string]any{"source": "user", "queued": true}})
	return err
}

// Link records a delegation's child session in the transcripts (see
// tools.WithSessionLinks).
func (d *Door) Link(parent, child, agent, callID string) {
	if d == nil {
		return
	}
	if err := d.sessions.link(parent, child, agent, callID); err != nil {
		d.logger.Warn("write the session transcript", "session", child, "err", err)
	}
}

// History is agent's conversation in session as of its last answer, a
// summary in place of what compactions replaced: from memory when this
// door held it, else from the session's transcript. The agent's next
// message list is expected to start with it.
func (d *Door) History(session, agent string) ([]plugins.ChatMessage, error) {
	key := [2]string{session, agent}
	d.mu.Lock()
	// A call cut off by the person may still be ending (its cancellation
	// travels through the agent's process): the next turn waits for it to
	// record what it got, or it would start from an older conversation.
	for c := d.convs[key]; c != nil && c.busy > 0; {
		d.idle.Wait()
	}
	c := d.convs[key]
	if c != nil && len(c.msgs) > 0 {
		msgs := append([]plugins.ChatMessage(nil), c.msgs...)
		if c.busy == 0 {
			// The next list starts with msgs, any summary already in
			// place; a compaction that was due still is.
			t := &thread{head: fingerprint(msgs[0])}
			if at := d.compactAtLocked(session, agent, c.model); at > 0 && c.used >= at {
				t.due = reasonRatio
			}
			for _, old := range c.threads {
				if old.due == reasonRequested {
					t.due = reasonRequested
				}
			}
			c.threads = []*thread{t}
			d.sessions.rebase(session, agent, len(msgs))
		}
		d.mu.Unlock()
		return msgs, nil
	}
	d.mu.Unlock()
	return d.sessions.history(session, agent)
}
