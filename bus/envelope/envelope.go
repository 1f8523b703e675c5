package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Version is the only envelope version this package speaks.
const Version = 1

// TimeFormat is the wire form of ts: UTC, milliseconds, a Z.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// BusSrc is the src of envelopes the broker itself writes.
const BusSrc = "bus"

// Envelope is one v1 frame. Optional fields are omitted when empty, never
// sent as null.
type Envelope struct {
	V              int             `json:"v"`
	Type           string          `json:"type"`
	ID             string          `json:"id"`
	TS             string          `json:"ts"`
	Src            string          `json:"src"`
	Dst            string          `json:"dst,omitempty"`
	Session        string          `json:"session,omitempty"`
	Seq            int64           `json:"seq,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Corr           string          `json:"corr,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	Status         string          `json:"status,omitempty"`
	Error          *Error          `json:"error,omitempty"`
}

// Error is the error object of a reply whose status is "error".
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Detail  string `json:"detail,omitempty"`
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Code + ": " + e.Message + " (" + e.Detail + ")"
	}
	return e.Code + ": " + e.Message
}

// Error codes. Clients treat any reply with status "error" as a failure; the
// code says which kind.
const (
	CodeInvalidJSON    = "invalid_json"
	CodeInvalidRequest = "invalid_request"
	CodeUnknownType    = "unknown_type"
	CodeNotFound       = "not_found"
	CodeForbidden      = "forbidden"
	CodeConflict       = "conflict"
	CodeTooLarge       = "too_large"
	CodeSlowConsumer   = "slow_consumer"
	// CodeLimit answers a command that would pass a configured cap; the
	// message names the config key.
	CodeLimit = "limit"
)

// Reply statuses. Anything but StatusError is a success.
const (
	StatusOK        = "ok"
	StatusDuplicate = "duplicate"
	StatusError     = "error"
)

// Command and event types.
const (
	TypeSessionCreate  = "session.create"
	TypeSessionList    = "session.list"
	TypeSessionClose   = "session.close"
	TypeAgentAdd       = "agent.add"
	TypeAgentRemove    = "agent.remove"
	TypeAgentList      = "agent.list"
	TypeAgentUpdate    = "agent.update"
	TypeMessageCreated = "message.created"
	TypeActionSubmit   = "action.submit"
	TypeActionResult   = "action.result"
	TypeTaskUpdated    = "task.updated"
	TypeTaskDone       = "task.done"
	TypeEventsHistory  = "events.history"
	TypeEventsStream   = "events.stream"
	TypeRelaySubmit    = "relay.submit"
	TypeRelayDone      = "relay.done"

	// Events the broker writes into a session's log.
	TypeSessionCreated = "session.created"
	TypeSessionClosed  = "session.closed"
	TypeAgentAdded     = "agent.added"
	TypeAgentRemoved   = "agent.removed"
	TypeAgentUpdated   = "agent.updated"
	TypeEventsRecord   = "events.record"
	// TypeRelayAccepted names the payload of relay.submit's reply.
	TypeRelayAccepted = "relay.accepted"
	TypeError         = "error"
)

// NewID returns a fresh envelope id (a random UUID).
func NewID() string { return uuid.NewString() }

// FormatTime renders t in the wire form of ts. The broker and the client
// stamp envelopes through a stamper, which calls it once per millisecond.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// New returns an envelope of the given type with v, id and ts filled in and
// payload marshalled (nil payload stays empty).
func New(typ, src string, payload any) (Envelope, error) {
	env := Envelope{V: Version, Type: typ, ID: NewID(), TS: FormatTime(time.Now()), Src: src}
	if payload != nil {
		raw, err := json.Marshal(payload)
		if err != nil {
			return Envelope{}, fmt.Errorf("marshal %s payload: %w", typ, err)
		}
		env.Payload = raw
	}
	return env, nil
}

// Err returns the reply's error, or nil when the reply is a success.
func (e Envelope) Err() error {
	if e.Status != StatusError {
		return nil
	}
	if e.Error == nil {
		return &Error{Code: "unknown", Message: "error reply without an error object"}
	}
	return e.Error
}

// Decode unmarshals the payload into v. An empty payload decodes as {}.
func (e Envelope) Decode(v any) error {
	if len(e.Payload) == 0 {
		return nil
	}
	if err := json.Unmarshal(e.Payload, v); err != nil {
		return fmt.Errorf("decode %s payload: %w", e.Type, err)
	}
	return nil
}

// normalizePayload drops a JSON null payload so it is omitted on the wire.
func normalizePayload(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	return raw
}

// Payloads of the commands and events. Optional fields are omitted when empty.

// SessionInfo describes one session in replies and session.list.
type SessionInfo struct {
	ID        string `json:"id"`
	Name      string `json:"name,omitempty"`
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// AgentInfo describes one agent in agent.list and agent events.
type AgentInfo struct {
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"`
	Status string `json:"status,omitempty"`
}

// Context ties actions and messages to a conversation.
type Context struct {
	ContextID       string `json:"context_id,omitempty"`
	OwnerID         string `json:"owner_id,omitempty"`
	ParentMessageID string `json:"parent_message_id,omitempty"`
}

// Message is the payload of message.created.
type Message struct {
	Text            string `json:"text"`
	Kind            string `json:"kind,omitempty"`
	ContextID       string `json:"context_id,omitempty"`
	OwnerID         string `json:"owner_id,omitempty"`
	ParentMessageID string `json:"parent_message_id,omitempty"`
	TaskID          string `json:"task_id,omitempty"`
	ReplyToActionID string `json:"reply_to_action_id,omitempty"`
	SenderName      string `json:"sender_name,omitempty"`
}

// Plan is the optional plan of a message action.
type Plan struct {
	Steps []string `json:"steps"`
	Note  string   `json:"note,omitempty"`
}

// Action is one item of action.submit.
type Action struct {
	Type            string `json:"type"`
	Dst             string `json:"dst"`
	ActionID        string `json:"action_id"`
	ActionIndex     *int   `json:"action_index"`
	Kind            string `json:"kind,omitempty"`
	Text            string `json:"text,omitempty"`
	SenderName      string `json:"sender_name,omitempty"`
	ReplyToActionID string `json:"reply_to_action_id,omitempty"`
	Plan            *Plan  `json:"plan,omitempty"`
	Command         string `json:"command,omitempty"`
	Args            string `json:"args,omitempty"`
	// RelayID and PlanStepID tie an action to the relay that sent it and
	// the plan step it serves (relay.submit); the bus copies them onto
	// replies to that action.
	RelayID    string `json:"relay_id,omitempty"`
	PlanStepID string `json:"plan_step_id,omitempty"`
	// ExpectsReply is kept as sent: codex-weave's TUI reads a missing
	// value as true, so an explicit false must survive.
	ExpectsReply *bool `json:"expects_reply,omitempty"`
	// Targets are the agents a wait action waits for (ids or names).
	Targets []string `json:"targets,omitempty"`
}

// Index returns the action's action_index, or -1 when it is missing.
func (a Action) Index() int {
	if a.ActionIndex == nil {
		return -1
	}
	return *a.ActionIndex
}

// Submit is the payload of action.submit.
type Submit struct {
	GroupID string   `json:"group_id"`
	Actions []Action `json:"actions"`
	Context *Context `json:"context,omitempty"`
	TaskID  string   `json:"task_id,omitempty"`
}

// Action kinds, types and control commands.
const (
	ActionMessage = "message"
	ActionControl = "control"
	// ActionWait, only in relay.submit, is the owner saying it waits for
	// its targets' replies (codex-weave's TUI tracks it from the
	// relay.accepted targets map); it is delivered to no one.
	ActionWait = "wait"

	KindUser    = "user"
	KindReply   = "reply"
	KindControl = "control"
	KindSystem  = "system"

	CommandNew       = "new"
	CommandCompact   = "compact"
	CommandInterrupt = "interrupt"
	CommandReview    = "review"
)

// Result statuses of action.result.
const (
	ResultAccepted  = "accepted"
	ResultCompleted = "completed"
	ResultBlocked   = "blocked"
	ResultQueued    = "queued"
	ResultRejected  = "rejected"
	ResultError     = "error"
)

// Terminal reports whether status ends an action: completed, rejected and
// error are terminal; accepted, queued and blocked are not.
func Terminal(status string) bool {
	switch status {
	case ResultCompleted, ResultRejected, ResultError:
		return true
	}
	return false
}

func validResultStatus(s string) bool {
	switch s {
	case ResultAccepted, ResultCompleted, ResultBlocked, ResultQueued, ResultRejected, ResultError:
		return true
	}
	return false
}

// ResultData carries ids a control command created (e.g. by new).
type ResultData struct {
	NewContextID string `json:"new_context_id,omitempty"`
	NewTaskID    string `json:"new_task_id,omitempty"`
}

// Result is the payload of action.result.
type Result struct {
	GroupID     string      `json:"group_id"`
	ActionID    string      `json:"action_id"`
	ActionIndex *int        `json:"action_index"`
	Status      string      `json:"status"`
	Detail      string      `json:"detail,omitempty"`
	Data        *ResultData `json:"data,omitempty"`
}

// TaskUpdate is the payload of task.updated.
type TaskUpdate struct {
	TaskID    string `json:"task_id"`
	Status    string `json:"status"`
	ContextID string `json:"context_id,omitempty"`
	OwnerID   string `json:"owner_id,omitempty"`
}

// TaskDone is the payload of task.done.
type TaskDone struct {
	TaskID    string `json:"task_id"`
	Summary   string `json:"summary,omitempty"`
	ContextID string `json:"context_id,omitempty"`
	OwnerID   string `json:"owner_id,omitempty"`
}

// Task statuses of task.updated.
const (
	TaskStatusRunning = "running"
	TaskStatusBlocked = "blocked"
	TaskStatusReady   = "ready"
	TaskStatusDone    = "done"
)

// Reply payloads of the commands.

// SessionList is the reply to session.list.
type SessionList struct {
	Sessions []SessionInfo `json:"sessions"`
}

// RelaySubmit is the payload of relay.submit: the owner's outbound relay,
// ordered actions for its targets.
type RelaySubmit struct {
	RelayID string   `json:"relay_id"`
	Targets []string `json:"targets,omitempty"`
	Actions []Action `json:"actions"`
	Context *Context `json:"context,omitempty"`
	TaskID  string   `json:"task_id,omitempty"`
	// Done ends the relay instead (codex-weave's TUI sends
	// {"relay_id":..., "done":{"relay_id":..., "summary":...}} with no
	// actions); the bus answers with relay.done to the owner.
	Done *RelayDone `json:"done,omitempty"`
}

// RelayAccepted is the payload of relay.submit's reply.
type RelayAccepted struct {
	RelayID     string         `json:"relay_id"`
	Status      string         `json:"status"` // accepted, partial, rejected
	ActionCount int            `json:"action_count"`
	TargetCount int            `json:"target_count"`
	Failures    []RelayFailure `json:"failures"`
	// RetryAfterMS is never set by this bus (it does not throttle); the
	// field is part of the reply clients read.
	RetryAfterMS int `json:"retry_after_ms,omitempty"`
	// Targets maps each target agent's id to what this submit gave it, as
	// codex-weave's TUI reads it to track pending actions, waits and plan
	// steps.
	Targets map[string]*RelayTarget `json:"targets"`
}

// RelayTarget is one target's share of a relay.submit.
type RelayTarget struct {
	ContextID string              `json:"context_id,omitempty"`
	TaskID    string              `json:"task_id,omitempty"`
	GroupID   string              `json:"group_id"`
	Actions   []RelayTargetAction `json:"actions"`
}

// RelayTargetAction is one accepted action of a target, wait included.
type RelayTargetAction struct {
	ActionID     string `json:"action_id"`
	ActionIndex  int    `json:"action_index"`
	Type         string `json:"type"`
	PlanStepID   string `json:"plan_step_id,omitempty"`
	ExpectsReply *bool  `json:"expects_reply,omitempty"`
	Command      string `json:"command,omitempty"`
}

// RelayFailure is one action of a relay that was not delivered.
type RelayFailure struct {
	Dst         string `json:"dst"`
	ActionIndex int    `json:"action_index"`
	Code        string `json:"code"`
	Message     string `json:"message"`
}

// RelayDone is the payload of relay.done, the end of a relay.
type RelayDone struct {
	RelayID string `json:"relay_id"`
	Summary string `json:"summary,omitempty"`
}

// AgentList is the reply to agent.list.
type AgentList struct {
	Agents []AgentInfo `json:"agents"`
}

// AgentJoined is the reply to agent.add; Rejoined is set when the agent was
// already in the session.
type AgentJoined struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Rejoined bool   `json:"rejoined"`
}

// MessageRecorded is the reply to message.created.
type MessageRecorded struct {
	MessageID string `json:"message_id"`
	Seq       int64  `json:"seq"`
}

// SubmitRecorded is the reply to action.submit: the agents the actions went
// to and the actions the loop guard rejected.
type SubmitRecorded struct {
	GroupID  string   `json:"group_id"`
	Targets  []string `json:"targets"`
	Rejected []string `json:"rejected"`
}

// ResultRecorded is the reply to action.result.
type ResultRecorded struct {
	ActionID string `json:"action_id"`
	Status   string `json:"status"`
	Terminal bool   `json:"terminal"`
}

// TaskRecorded is the reply to task.updated and task.done.
type TaskRecorded struct {
	TaskID string `json:"task_id"`
	Status string `json:"status"`
}

// Records is the reply to events.history (and events.stream without
// follow).
type Records struct {
	Records []Envelope `json:"records"`
}

// StreamStarted acknowledges events.stream with follow; Seq is the session's
// last event seq when the stream began.
type StreamStarted struct {
	Follow bool  `json:"follow"`
	Seq    int64 `json:"seq"`
}

// IntPtr returns a pointer to i, for Action.ActionIndex and Result.ActionIndex.
func IntPtr(i int) *int { return &i }
