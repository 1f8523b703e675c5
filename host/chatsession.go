package host

import (
	"context"
	"time"

	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

// SessionStart runs the session.start hooks (Claude Code's SessionStart)
// for a conversation with agent in session; source is "startup" for a new
// session, "resume" for one continued. What the hooks add goes with the
// session's first model call. A hook's failure is logged, never fatal.
// Nothing happens unless the host is opened WithTools.
func (h *Host) SessionStart(ctx context.Context, session, agent, source string) {
	if h.model == nil || h.pipeline == nil {
		return
	}
	out, err := h.pipeline.Run(ctx, plugins.Event{Name: plugins.EventSessionStart, SessionID: session, Agent: agent,
		Cwd: h.project, Time: time.Now(), Data: map[string]any{"source": source}})
	if err != nil {
		h.logger.Warn("session.start hooks failed", "session", session, "err", err)
	}
	h.model.AddContext(session, out.Context)
}

// SessionEnd runs the session.end hooks (Claude Code's SessionEnd) as a
// conversation ends; reason is Claude Code's ("prompt_input_exit",
// "other"). It runs even when ctx is cancelled.
func (h *Host) SessionEnd(ctx context.Context, session, agent, reason string) {
	if h.model == nil || h.pipeline == nil {
		return
	}
	if _, err := h.pipeline.Run(context.WithoutCancel(ctx), plugins.Event{Name: plugins.EventSessionEnd, SessionID: session, Agent: agent,
		Cwd: h.project, Time: time.Now(), Data: map[string]any{"reason": reason}}); err != nil {
		h.logger.Warn("session.end hooks failed", "session", session, "err", err)
	}
}

// Notify tells the notification hooks (Claude Code's Notification) that a
// person is needed in session: kind is a hooks.Notify* type
// (hooks.NotifyPermissionPrompt as a permission prompt is shown), message
// says why in a line. A hook's failure is logged, never fatal.
func (h *Host) Notify(ctx context.Context, session, kind, message string) {
	if h.pipeline == nil {
		return
	}
	ev := hooks.NotificationEvent(kind, message)
	ev.SessionID, ev.Cwd = session, h.project
	if _, err := h.pipeline.Run(context.WithoutCancel(ctx), ev); err != nil {
		h.logger.Warn("notification hooks failed", "session", session, "err", err)
	}
}
