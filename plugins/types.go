package plugins

import (
	"context"
	"encoding/json"
	"time"
)

// Kind is the kind of a plugin.
type Kind string

// The plugin kinds.
const (
	KindAgent Kind = "agent"
	KindHook  Kind = "hook"
)

// Hook event names. A hook subscribes to one or more of them in its Info.
const (
	EventSessionStart         = "session.start"
	EventChatMessage          = "chat.message"
	EventCommandExecuteBefore = "command.execute.before"
	EventToolExecuteBefore    = "tool.execute.before"
	EventToolExecuteAfter     = "tool.execute.after"
	EventSessionIdle          = "session.idle"
	EventSessionCompacting    = "session.compacting"
	EventSessionCompacted     = "session.compacted"
	EventPlanTaskDone         = "plan.task.done"
	EventSessionEnd           = "session.end"
)

// Events lists every hook event, in the order of a session's life.
var Events = []string{
	EventSessionStart,
	EventChatMessage,
	EventCommandExecuteBefore,
	EventToolExecuteBefore,
	EventToolExecuteAfter,
	EventSessionIdle,
	EventSessionCompacting,
	EventSessionCompacted,
	EventPlanTaskDone,
	EventSessionEnd,
}

// Tool names, as the capability matrix and the tool gate know them.
const (
	ToolRead      = "read"
	ToolWrite     = "write"
	ToolEdit      = "edit"
	ToolBash      = "bash"
	ToolGlob      = "glob"
	ToolGrep      = "grep"
	ToolWebFetch  = "webfetch"
	ToolTask      = "task"
	ToolTodoWrite = "todowrite"
	ToolPlanCheck = "plan_check"
)

// Info describes a plugin. Hooks fill Events and Priority; agents fill Role.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Kind    Kind   `json:"kind"`
	// Events are the hook events a hook handles.
	Events []string `json:"events,omitempty"`
	// Priority orders hooks on one event: lower runs first, ties by name.
	Priority int `json:"priority,omitempty"`
	// Role is the agent role an agent plugin plays (e.g. "tapestry").
	Role string `json:"role,omitempty"`
}

// Event is what a hook is asked to decide on. Fields that do not apply to an
// event are left empty.
type Event struct {
	Name      string `json:"name"`
	SessionID string `json:"session_id,omitempty"`
	// Agent is the agent acting in the session (e.g. "tapestry").
	Agent string `json:"agent,omitempty"`
	// Cwd is the project directory.
	Cwd string `json:"cwd,omitempty"`
	// Tool and Args are set on tool.execute.before and tool.execute.after.
	Tool string         `json:"tool,omitempty"`
	Args map[string]any `json:"args,omitempty"`
	// Result is set on tool.execute.after.
	Result *ToolResult `json:"result,omitempty"`
	// Message is the user's text on chat.message.
	Message string `json:"message,omitempty"`
	// Command and Arguments are set on command.execute.before
	// (e.g. "start-work", "oauth2-login").
	Command   string `json:"command,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	// Plan and Task are set on plan.task.done and where a plan is active.
	Plan string   `json:"plan,omitempty"`
	Task *TaskRef `json:"task,omitempty"`
	// Data carries anything else the event has (token use on chat.message,
	// the reason on session.end).
	Data map[string]any `json:"data,omitempty"`
	Time time.Time      `json:"time"`
}

// TaskRef names a plan task.
type TaskRef struct {
	Number int    `json:"number,omitempty"`
	Title  string `json:"title"`
}

// Action is what a hook decided.
type Action string

// The hook actions. An empty Action means Allow.
const (
	Allow  Action = "allow"
	Block  Action = "block"
	Modify Action = "modify"
)

// Decision is a hook's answer to an event. A hook that could not answer
// returns a Go error instead; an error is never a decision.
type Decision struct {
	Action Action `json:"action"`
	// Reason says why a hook blocked; it is shown to the agent and the user.
	Reason string `json:"reason,omitempty"`
	// Args replaces the tool arguments (Modify on tool.execute.before).
	Args map[string]any `json:"args,omitempty"`
	// Text replaces the message text (Modify on chat.message).
	Text string `json:"text,omitempty"`
	// Context is added to the agent's context, whatever the action.
	Context string `json:"context,omitempty"`
}

// ToolCall is a request to run one tool.
type ToolCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// ToolResult is what a tool returned. A tool that ran and failed (a command
// that exited non-zero, a denied call, a missing file) reports IsError with
// Output saying why, so that an agent can read it; a Go error means the call
// could not be made at all.
type ToolResult struct {
	Output   string `json:"output"`
	IsError  bool   `json:"is_error,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
	// Denied is set when the capability gate or a hook refused the call.
	Denied bool `json:"denied,omitempty"`
}

// Hook is implemented by hook plugins.
type Hook interface {
	Info(ctx context.Context) (Info, error)
	Handle(ctx context.Context, ev Event) (Decision, error)
}

// AgentRequest asks an agent to do one piece of work.
type AgentRequest struct {
	SessionID string `json:"session_id"`
	// Prompt is the instruction (a task's text, or a delegated request).
	Prompt string `json:"prompt"`
	// Plan and Task are set when the work is a plan task.
	Plan string          `json:"plan,omitempty"`
	Task *TaskRef        `json:"task,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// AgentResponse is an agent's answer.
type AgentResponse struct {
	Output string `json:"output"`
	// Done reports that the requested work is complete and verified.
	Done bool `json:"done"`
	// Error is a domain failure (a verify block failed, a tool was denied).
	Error string `json:"error,omitempty"`
}

// Agent is implemented by agent plugins. Handle reaches tools, the model and
// plans only through the Host it is given.
type Agent interface {
	Info(ctx context.Context) (Info, error)
	Handle(ctx context.Context, host Host, req AgentRequest) (AgentResponse, error)
}

// Host is what the host offers a plugin while it handles a call.
type Host interface {
	// CallTool runs a tool through the capability gate and the tool hooks.
	CallTool(ctx context.Context, call ToolCall) (ToolResult, error)
	// Log writes a line to the host log under the plugin's name.
	Log(ctx context.Context, level, msg string) error
}
