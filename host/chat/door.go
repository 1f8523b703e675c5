package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
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
)

// ModelEvent is one thing a model call did, streamed as it happens.
type ModelEvent struct {
	Type    string         `json:"type"`
	Session string         `json:"session,omitempty"`
	Agent   string         `json:"agent,omitempty"`
	Text    string         `json:"text,omitempty"`
	Tool    string         `json:"tool,omitempty"`
	ToolID  string         `json:"tool_id,omitempty"`
	Usage   *plugins.Usage `json:"usage,omitempty"`
	// ContextWindow is the model's window, on model.usage.
	ContextWindow int `json:"context_window,omitempty"`
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
}

// modelService is the host's Model service: it answers the agents' chats
// with the configured provider, streams what the model says to the
// observers and the bus (session:<id>), fires chat.message for each user
// message (before the call: hooks may modify, block or add context) and for
// each answer (after: with tokens_used and context_window, so the
// context-window monitor sees real use), records the session's transcript
// (.weave/sessions/<id>.jsonl), carries the context hooks add after an
// answer into the session's next call, and compacts conversations that
// near the context window (compact.go).
type modelService struct {
	provider model.Provider
	// err says why there is no provider.
	err     error
	window  int
	project string
	// compactAt is the token count, of the window, at which a
	// conversation is compacted before its next call.
	compactAt int64
	pipeline  *hooks.Pipeline
	bus       bus.Bus
	logger    *slog.Logger
	sessions  *sessionLog
	// plans reads the work state a summary carries; nil: none.
	plans func(session string) planSnapshot

	mu        sync.Mutex
	observers map[int]func(ModelEvent)
	nextObs   int
	// pending holds context for a session's next call.
	pending map[string][]string
	// convs holds each agent's conversation by session and agent.
	convs map[[2]string]*conversation
	// idle is signalled, with mu, when a conversation has no call in
	// flight.
	idle *sync.Cond
}

func newModelService(project string, cfg *config.Config, pipeline *hooks.Pipeline, b bus.Bus, logger *slog.Logger, getenv func(string) string) *modelService {
	m := &modelService{project: project, pipeline: pipeline, bus: b, logger: logger, sessions: newSessionLog(project),
		observers: map[int]func(ModelEvent){}, pending: map[string][]string{}, convs: map[[2]string]*conversation{}}
	m.idle = sync.NewCond(&m.mu)
	m.provider, m.err = model.Open(cfg.Model, getenv)
	m.window = cfg.Model.ContextWindow
	if m.window <= 0 {
		m.window = model.DefaultContextWindow(cfg.Model.Provider)
	}
	// The ratio is the context-window monitor's, defaults included.
	ratio := hooks.NewContextWindowMonitor(cfg.ContextWindow.WarnRatio, cfg.ContextWindow.CompactRatio).CompactRatio()
	m.compactAt = int64(ratio * float64(m.window))
	return m
}

// observe adds f to the observers until the returned func is called.
func (m *modelService) observe(f func(ModelEvent)) (stop func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.nextObs
	m.nextObs++
	m.observers[id] = f
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.observers, id)
	}
}

func (m *modelService) emit(ctx context.Context, ev ModelEvent) {
	m.mu.Lock()
	obs := make([]func(ModelEvent), 0, len(m.observers))
	for _, f := range m.observers {
		obs = append(obs, f)
	}
	m.mu.Unlock()
	for _, f := range obs {
		f(ev)
	}
	if m.bus == nil || ev.Session == "" {
		return
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return
	}
	if _, err := m.bus.Publish(context.WithoutCancel(ctx), bus.Message{Topic: "session:" + ev.Session, Payload: payload}); err != nil {
		m.logger.Debug("publish model event", "err", err)
	}
}

// funcFor is the tools.ModelFunc of the host.
func (m *modelService) funcFor(session, agent string) func(context.Context, plugins.ChatRequest) (plugins.ChatResponse, error) {
	return func(ctx context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error) {
		return m.complete(ctx, session, agent, req)
	}
}

func (m *modelService) complete(ctx context.Context, session, agent string, req plugins.ChatRequest) (plugins.ChatResponse, error) {
	if m.provider == nil {
		return plugins.ChatResponse{}, m.err
	}
	req.Messages = append([]plugins.ChatMessage(nil), req.Messages...)
	var add []string
	m.mu.Lock()
	add, m.pending[session] = m.pending[session], nil
	m.mu.Unlock()
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == plugins.RoleUser {
		out, err := m.fire(ctx, plugins.Event{Name: plugins.EventChatMessage, SessionID: session, Agent: agent, Time: time.Now(),
			Message: req.Messages[n-1].Content, Data: map[string]any{"source": tools.MessageSource(ctx)}})
		if err != nil {
			return plugins.ChatResponse{}, err
		}
		if out.Blocked() {
			return plugins.ChatResponse{}, fmt.Errorf("the message was blocked by a hook: %s", out.Reason)
		}
		if out.Action == plugins.Modify && out.Text != "" {
			req.Messages[n-1].Content = out.Text
		}
		add = append(add, out.Context...)
	}
	// list is the conversation as the agent holds it, without this call's
	// reminders; the model gets it with the summary in place of what a
	// compaction replaced.
	list := req.Messages
	key := [2]string{session, agent}
	m.mu.Lock()
	c := m.convs[key]
	if c == nil {
		c = newConversation()
		m.convs[key] = c
	}
	c.busy++
	c.model, c.system, c.tools = req.Model, req.System, req.Tools
	t := c.threadFor(list)
	due := t.due
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		c.busy--
		if c.busy == 0 {
			m.idle.Broadcast()
		}
		m.mu.Unlock()
	}()
	if due != "" {
		m.mu.Lock()
		job := compactJob{trigger: CompactAuto, reason: due, before: c.used}
		m.mu.Unlock()
		if due == reasonRequested {
			job.trigger = CompactManual
		}
		m.compactCall(ctx, c, t, list, req, job, session, agent)
	}
	// partial is what the model wrote so far in the current call.
	var partial strings.Builder
	call := func() (plugins.ChatResponse, []plugins.ChatMessage, error) {
		m.mu.Lock()
		eff := t.effective(list)
		m.mu.Unlock()
		sent := req
		sent.Messages = eff
		if n := len(eff); n > 0 && len(add) > 0 {
			// Hooks speak to the model as Claude Code's do: a reminder
			// beside the newest message, for this call only.
			sent.Messages = append([]plugins.ChatMessage(nil), eff...)
			sent.Messages[n-1].Content += "\n\n<system-reminder>\n" + strings.Join(add, "\n\n") + "\n</system-reminder>"
		}
		partial.Reset()
		resp, err := m.provider.Complete(ctx, sent, func(d model.Delta) {
			ev := ModelEvent{Type: ModelDelta, Session: session, Agent: agent, Text: d.Text}
			if d.ToolCall != nil {
				ev = ModelEvent{Type: ModelToolCall, Session: session, Agent: agent, Tool: d.ToolCall.Tool, ToolID: d.ToolCall.ID}
			}
			partial.WriteString(d.Text)
			m.emit(ctx, ev)
		})
		return resp, eff, err
	}
	resp, eff, err := call()
	if errors.Is(err, model.ErrContextTooLong) && ctx.Err() == nil {
		// Too long for the window: compact, and try once more.
		if m.compactCall(ctx, c, t, list, req, compactJob{trigger: CompactAuto, reason: reasonContextTooLong}, session, agent) {
			resp, eff, err = call()
		}
	}
	if err != nil && ctx.Err() != nil {
		// Cut off: what was asked and what the model wrote so far stay
		// in the conversation, which resumes from there.
		msgs := append([]plugins.ChatMessage(nil), eff...)
		var cut string
		if p := partial.String(); p != "" {
			cut = p + "\n[interrupted]"
			msgs = append(msgs, plugins.ChatMessage{Role: plugins.RoleAssistant, Content: cut})
		}
		m.mu.Lock()
		c.msgs = msgs
		m.mu.Unlock()
		if err := m.sessions.recordCut(session, agent, list, cut); err != nil {
			m.logger.Warn("write the session transcript", "session", session, "err", err)
		}
		return resp, err
	}
	if err != nil {
		m.logger.Warn("model call failed", "agent", agent, "session", session, "err", err)
		return resp, err
	}
	u := resp.Usage
	used := u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
	m.mu.Lock()
	c.msgs = append(append(make([]plugins.ChatMessage, 0, len(eff)+1), eff...), resp.Message)
	c.used = used
	if m.compactAt > 0 && used >= m.compactAt {
		t.due = reasonRatio
	}
	m.mu.Unlock()
	recorded := req
	recorded.Messages = list
	if err := m.sessions.record(session, agent, recorded, resp); err != nil {
		m.logger.Warn("write the session transcript", "session", session, "err", err)
	}
	m.emit(ctx, ModelEvent{Type: ModelUsage, Session: session, Agent: agent, Usage: &u, ContextWindow: m.window})
	out, err := m.fire(ctx, plugins.Event{Name: plugins.EventChatMessage, SessionID: session, Agent: agent, Time: time.Now(),
		Message: resp.Message.Content, Data: map[string]any{"source": "assistant", "tokens_used": used, "context_window": m.window}})
	if err != nil {
		m.logger.Warn("chat.message hooks failed after an answer", "err", err)
	} else if len(out.Context) > 0 {
		m.mu.Lock()
		m.pending[session] = append(m.pending[session], out.Context...)
		m.mu.Unlock()
	}
	return resp, nil
}

// compactCall compacts a call's thread and reports whether it did; a
// compaction that fails leaves the call as it was, and says why in the log.
func (m *modelService) compactCall(ctx context.Context, c *conversation, t *thread, list []plugins.ChatMessage, req plugins.ChatRequest, job compactJob, session, agent string) bool {
	job.session, job.agent = session, agent
	if err := c.lock(ctx); err != nil {
		return false
	}
	defer c.unlock()
	if err := m.compactThread(ctx, c, t, list, req, job); err != nil {
		m.logger.Warn("conversation not compacted", "agent", agent, "session", session, "reason", job.reason, "err", err)
		m.mu.Lock()
		t.due = ""
		m.mu.Unlock()
		return false
	}
	return true
}

func (m *modelService) fire(ctx context.Context, ev plugins.Event) (hooks.Outcome, error) {
	return m.firePipeline(ctx, ev)
}

// firePipeline runs ev's hooks.
func (m *modelService) firePipeline(ctx context.Context, ev plugins.Event) (hooks.Outcome, error) {
	if m.pipeline == nil {
		return hooks.Outcome{}, nil
	}
	out, err := m.pipeline.Run(ctx, ev)
	if err != nil {
		return out, fmt.Errorf("%s hooks: %w", ev.Name, err)
	}
	return out, nil
}

// link records a delegation's child session in the transcripts (see
// tools.WithSessionLinks).
func (m *modelService) link(parent, child, agent, callID string) {
	if m == nil {
		return
	}
	if err := m.sessions.link(parent, child, agent, callID); err != nil {
		m.logger.Warn("write the session transcript", "session", child, "err", err)
	}
}

// history is agent's conversation in session as of its last answer, a
// summary in place of what compactions replaced: from memory when this
// host held it, else from the session's transcript. The agent's next
// message list is expected to start with it.
func (m *modelService) history(session, agent string) ([]plugins.ChatMessage, error) {
	key := [2]string{session, agent}
	m.mu.Lock()
	// A call cut off by the person may still be ending (its cancellation
	// travels through the agent's process): the next turn waits for it to
	// record what it got, or it would start from an older conversation.
	for c := m.convs[key]; c != nil && c.busy > 0; {
		m.idle.Wait()
	}
	c := m.convs[key]
	if c != nil && len(c.msgs) > 0 {
		msgs := append([]plugins.ChatMessage(nil), c.msgs...)
		if c.busy == 0 {
			// The next list starts with msgs, any summary already in
			// place; a compaction that was due still is.
			t := &thread{head: fingerprint(msgs[0])}
			if m.compactAt > 0 && c.used >= m.compactAt {
				t.due = reasonRatio
			}
			for _, old := range c.threads {
				if old.due == reasonRequested {
					t.due = reasonRequested
				}
			}
			c.threads = []*thread{t}
			m.sessions.rebase(session, agent, len(msgs))
		}
		m.mu.Unlock()
		return msgs, nil
	}
	m.mu.Unlock()
	return m.sessions.history(session, agent)
}
