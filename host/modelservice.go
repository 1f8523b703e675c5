package host

import (
	"context"
	"encoding/json"
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
}

// modelService is the host's Model service: it answers the agents' chats
// with the configured provider, streams what the model says to the
// observers and the bus (session:<id>), fires chat.message for each user
// message (before the call: hooks may modify, block or add context) and for
// each answer (after: with tokens_used and context_window, so the
// context-window monitor sees real use), records the session's transcript
// (.weave/sessions/<id>.jsonl), and carries the context hooks add
// after an answer into the session's next call.
type modelService struct {
	provider model.Provider
	// err says why there is no provider.
	err      error
	window   int
	pipeline *hooks.Pipeline
	bus      bus.Bus
	logger   *slog.Logger
	sessions *sessionLog

	mu        sync.Mutex
	observers map[int]func(ModelEvent)
	nextObs   int
	// pending holds context for a session's next call.
	pending map[string][]string
	// convs holds each agent's conversation by session and agent, as of
	// its last answer: what the next Ask in that session continues.
	convs map[[2]string][]plugins.ChatMessage
}

func newModelService(project string, cfg *config.Config, pipeline *hooks.Pipeline, b bus.Bus, logger *slog.Logger, getenv func(string) string) *modelService {
	m := &modelService{pipeline: pipeline, bus: b, logger: logger, sessions: newSessionLog(project),
		observers: map[int]func(ModelEvent){}, pending: map[string][]string{}, convs: map[[2]string][]plugins.ChatMessage{}}
	m.provider, m.err = model.Open(cfg.Model, getenv)
	m.window = cfg.Model.ContextWindow
	if m.window <= 0 {
		m.window = model.DefaultContextWindow(cfg.Model.Provider)
	}
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
	// The conversation as the agent holds it, without this call's reminders.
	conv := append([]plugins.ChatMessage(nil), req.Messages...)
	if n := len(req.Messages); n > 0 && len(add) > 0 {
		// Hooks speak to the model as Claude Code's do: a reminder beside
		// the newest message, for this call only.
		req.Messages[n-1].Content += "\n\n<system-reminder>\n" + strings.Join(add, "\n\n") + "\n</system-reminder>"
	}
	resp, err := m.provider.Complete(ctx, req, func(d model.Delta) {
		ev := ModelEvent{Type: ModelDelta, Session: session, Agent: agent, Text: d.Text}
		if d.ToolCall != nil {
			ev = ModelEvent{Type: ModelToolCall, Session: session, Agent: agent, Tool: d.ToolCall.Tool, ToolID: d.ToolCall.ID}
		}
		m.emit(ctx, ev)
	})
	if err != nil {
		m.logger.Warn("model call failed", "agent", agent, "session", session, "err", err)
		return resp, err
	}
	m.mu.Lock()
	m.convs[[2]string{session, agent}] = append(conv, resp.Message)
	m.mu.Unlock()
	recorded := req
	recorded.Messages = conv
	if err := m.sessions.record(session, agent, recorded, resp); err != nil {
		m.logger.Warn("write the session transcript", "session", session, "err", err)
	}
	u := resp.Usage
	used := u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
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

func (m *modelService) fire(ctx context.Context, ev plugins.Event) (hooks.Outcome, error) {
	if m.pipeline == nil {
		return hooks.Outcome{}, nil
	}
	out, err := m.pipeline.Run(ctx, ev)
	if err != nil {
		return out, fmt.Errorf("chat.message hooks: %w", err)
	}
	return out, nil
}

// history is agent's conversation in session as of its last answer: from
// memory when this host held it, else from the session's transcript.
func (m *modelService) history(session, agent string) ([]plugins.ChatMessage, error) {
	m.mu.Lock()
	conv, ok := m.convs[[2]string{session, agent}]
	m.mu.Unlock()
	if ok {
		return append([]plugins.ChatMessage(nil), conv...), nil
	}
	return m.sessions.history(session, agent)
}
