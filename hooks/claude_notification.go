package hooks

import (
	"time"

	"github.com/weavehq/weave/plugins"
)

// ClaudeNotification runs when a person is needed. The matcher is matched
// against notification_type: "plan_paused" when a run pauses (a task
// failed, Ctrl-C), "permission_prompt" when a permission is to be given.
const ClaudeNotification = "Notification"

// The notification types Weave sends.
const (
	NotifyPlanPaused       = "plan_paused"
	NotifyPermissionPrompt = "permission_prompt"
)

// NotificationEvent is the notification event that tells the hooks a
// person is needed: kind is one of the Notify* types, message says why in a
// line. Run it through the pipeline as any event; the caller fills
// SessionID and Cwd when it has them.
func NotificationEvent(kind, message string) plugins.Event {
	return plugins.Event{Name: plugins.EventNotification, Time: time.Now(), Message: message,
		Data: map[string]any{"notification_type": kind}}
}

var notification = claudeBinding{
	weave:   plugins.EventNotification,
	matchOn: func(ev plugins.Event) string { return dataString(ev, "notification_type", "") },
	input: func(in *claudeInput, ev plugins.Event) {
		in.Message = ev.Message
		in.Title = "Weave"
		in.NotificationType = dataString(ev, "notification_type", "")
	},
}
