package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
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
	EventPlanTodosDone        = "plan.todos.done"
	// EventNotification says a person is needed: a plan paused, a
	// permission to give (data "notification_type", Message the text).
	EventNotification = "notification"
	EventSessionEnd   = "session.end"
	// EventPermissionRequest fires when a tool call must be approved (a
	// permission rule's or a hook's ask), before anyone is asked: Block
	// denies it (Reason reaches the agent), Modify approves it, Allow
	// leaves it to the one asked.
	EventPermissionRequest = "permission.request"
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
	EventPlanTodosDone,
	EventNotification,
	EventSessionEnd,
	EventPermissionRequest,
}

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
	// Tools narrows the tool events a hook handles to some tools, as a
	// Claude Code matcher does: under tool.execute.before or
	// tool.execute.after, the tools (ToolWrite, ToolBash, ...) the hook is
	// called for. A tool event that is not a key calls the hook for every
	// tool; a key with an empty list, for none. The host never calls a hook
	// for a tool it does not list, so a hook that cares about a few tools
	// costs nothing on the others. An entry "mcp__<server>__*" (or
	// "mcp__*") stands for every MCP tool whose name begins so.
	Tools map[string][]string `json:"tools,omitempty"`
}

// ToolEvent reports whether event carries a tool call (tool.execute.before
// or tool.execute.after), the events Info.Tools can narrow.
func ToolEvent(event string) bool {
	return event == EventToolExecuteBefore || event == EventToolExecuteAfter || event == EventPermissionRequest
}

// Handles reports whether a hook described by i is called on event for
// tool (tool is ignored on events that carry none).
func (i Info) Handles(event, tool string) bool {
	if !slices.Contains(i.Events, event) {
		return false
	}
	if !ToolEvent(event) {
		return true
	}
	names, narrowed := i.Tools[event]
	if !narrowed || slices.Contains(names, tool) {
		return true
	}
	if _, mcp := MCPServerOf(tool); mcp {
		for _, n := range names {
			if p, ok := strings.CutSuffix(n, "*"); ok && strings.HasPrefix(p, MCPPrefix) && strings.HasPrefix(tool, p) {
				return true
			}
		}
	}
	return false
}

// CheckTools reports a Tools entry the host cannot honour: a key that is not
// a tool event the hook handles, or a name that is not a tool of the host.
func (i Info) CheckTools() error {
	var errs []error
	for _, ev := range slices.Sorted(maps.Keys(i.Tools)) {
		if !ToolEvent(ev) {
			errs = append(errs, fmt.Errorf("tools are listed under %q, but only %s and %s carry tools", ev, EventToolExecuteBefore, EventToolExecuteAfter))
			continue
		}
		if !slices.Contains(i.Events, ev) {
			errs = append(errs, fmt.Errorf("tools are listed under %q, which is not in Events; add it to Events or drop the entry", ev))
		}
		for _, t := range i.Tools[ev] {
			if strings.HasPrefix(t, MCPPrefix) {
				continue // an MCP tool or pattern: the servers are the config's
			}
			if _, ok := LookupTool(t); !ok {
				errs = append(errs, fmt.Errorf("unknown tool %q under %s (known: %s)", t, ev, strings.Join(ToolNames(), ", ")))
			}
		}
	}
	return errors.Join(errs...)
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
	// Ask, on tool.execute.before, says the call needs approval: the person
	// at weave chat's terminal, or a bus peer with --ask-via bus, is asked,
	// and where nobody can answer the call is denied. On other events it
	// blocks.
	Ask Action = "ask"
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
	// ID is the model's id for the call when a model asked for it; it ties a
	// tool result back to the call in a chat.
	ID string `json:"id,omitempty"`
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
	// BlockedBy names the hook that blocked the call (Denied is set too);
	// empty when the capability gate refused it.
	BlockedBy string `json:"blocked_by,omitempty"`
	// Reason is why the call was refused, in words for a person; Output
	// says it to the model.
	Reason string `json:"reason,omitempty"`
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
	// History is the conversation this prompt continues, oldest first: the
	// person's earlier messages, the agent's answers, its tool calls and
	// their results (or a summary of them after a compaction). Empty starts
	// a new conversation.
	History []ChatMessage `json:"history,omitempty"`
}

// AgentResponse is an agent's answer.
type AgentResponse struct {
	Output string `json:"output"`
	// Done reports that the requested work is complete and verified.
	Done bool `json:"done"`
	// Error is a domain failure (a verify block failed, a tool was denied).
	Error string `json:"error,omitempty"`
	// BlockedBy names the hook whose block stopped the work (a
	// ToolResult's BlockedBy): a decision, which the host does not retry.
	BlockedBy string `json:"blocked_by,omitempty"`
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
	// Log writes a line to the host log under the plugin's name. Level is
	// "trace", "debug", "info", "warn" or "error".
	Log(ctx context.Context, level, msg string) error
	// Complete asks the host's model to answer a chat. The host owns the
	// credentials and counts the tokens.
	Complete(ctx context.Context, req ChatRequest) (ChatResponse, error)
	// Progress reports a plan's tasks; an empty plan means the active plan.
	Progress(ctx context.Context, plan string) (PlanProgress, error)
	// TickTask marks a plan task done and returns the plan's new progress.
	TickTask(ctx context.Context, plan string, task TaskRef) (PlanProgress, error)
}

// Manifest is what a plugin says about itself: its Info and the protocol it
// speaks. A plugin binary prints it as JSON when run with the single argument
// "describe".
type Manifest struct {
	Info
	ProtocolVersion int `json:"protocol_version"`
}

// ChatRole is the author of a chat message.
type ChatRole string

// The chat roles.
const (
	RoleSystem    ChatRole = "system"
	RoleUser      ChatRole = "user"
	RoleAssistant ChatRole = "assistant"
	// RoleTool carries the result of one tool call, named by ToolCallID.
	RoleTool ChatRole = "tool"
)

// ChatMessage is one message of a chat.
type ChatMessage struct {
	Role    ChatRole `json:"role"`
	Content string   `json:"content,omitempty"`
	// ToolCalls are the tool calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and IsError are set on a RoleTool message.
	ToolCallID string `json:"tool_call_id,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
}

// ToolSpec offers a tool to the model.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Schema is the JSON Schema of the tool's arguments.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// ChatRequest asks the model for the next message of a chat.
type ChatRequest struct {
	// Model overrides the configured model; empty uses the agent's default.
	Model    string        `json:"model,omitempty"`
	System   string        `json:"system,omitempty"`
	Messages []ChatMessage `json:"messages"`
	Tools    []ToolSpec    `json:"tools,omitempty"`
	// Temperature, when set, overrides the agent's temperature.
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
}

// Usage counts the tokens of one completion.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// ChatResponse is the model's answer: an assistant message, possibly asking
// for tool calls.
type ChatResponse struct {
	Message ChatMessage `json:"message"`
	// StopReason is "end", "tool_calls", "max_tokens" or a provider's reason.
	StopReason string `json:"stop_reason,omitempty"`
	Usage      Usage  `json:"usage"`
	// Model is the model that answered.
	Model string `json:"model,omitempty"`
}

// PlanTask is one task of a plan.
type PlanTask struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Done   bool   `json:"done"`
}

// PlanProgress is where a plan stands.
type PlanProgress struct {
	Plan  string     `json:"plan"`
	Total int        `json:"total"`
	Done  int        `json:"done"`
	Tasks []PlanTask `json:"tasks,omitempty"`
}
