package busface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/host/tools"
)

// AskTopic is the topic a session's permission questions go to,
// ask:<session>; it is protected (bus/topics.go): only a peer with the
// token may answer them.
func AskTopic(session string) string { return "ask:" + session }

// AskRequestType is payload.type of a permission question.
const AskRequestType = "permission.ask"

// AskRequest is a permission question's payload.
type AskRequest struct {
	Type    string         `json:"type"`
	Session string         `json:"session_id"`
	Agent   string         `json:"agent"`
	Chain   []string       `json:"chain"`
	Tool    string         `json:"tool"`
	Args    map[string]any `json:"args,omitempty"`
	// Cause is what asks: "rule Bash(rm:*)", "hook guard: ...".
	Cause string `json:"cause"`
	// TimeoutSeconds is how long the question waits for an answer.
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// AskAnswer is what a peer answers in its ack's result (or, as JSON, in
// its message): {"allow": true}, {"allow": true, "session": true} or
// {"allow": false, "reason": "..."}.
type AskAnswer struct {
	Allow   bool   `json:"allow"`
	Session bool   `json:"session,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Asker puts permission questions on the bus, on ask:<session>, and takes
// the first processed answer. A question nobody answers within Timeout is
// denied.
type Asker struct {
	Bus     bus.Bus
	Timeout time.Duration
}

// AskPermission implements tools.Asker.
func (a Asker) AskPermission(ctx context.Context, q tools.Question) (tools.Answer, error) {
	payload, err := json.Marshal(AskRequest{Type: AskRequestType, Session: q.Session, Agent: q.Caller.Role(), Chain: q.Caller.Path(),
		Tool: q.Tool, Args: q.Args, Cause: q.Cause, TimeoutSeconds: a.Timeout.Seconds()})
	if err != nil {
		return tools.Answer{}, fmt.Errorf("encode the question: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	type reply struct {
		res bus.Result
		err error
	}
	done := make(chan reply, 1)
	go func() {
		res, err := a.Bus.Request(ctx, bus.Message{Topic: AskTopic(q.Session), Payload: payload, Headers: map[string]string{"sender": q.Caller.Role()}})
		done <- reply{res, err}
	}()
	var r reply
	select {
	case r = <-done:
	case <-ctx.Done():
	}
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
		return tools.Answer{}, fmt.Errorf("no answer on %s within %s", AskTopic(q.Session), a.Timeout)
	}
	if r.err != nil {
		return tools.Answer{}, fmt.Errorf("the question on %s failed: %w", AskTopic(q.Session), r.err)
	}
	for _, ack := range r.res.Acks {
		var ans AskAnswer
		if ack.Processed && ackObject(ack, &ans) {
			by := "the bus peer asked"
			if ack.Subscriber != "" {
				by = "bus peer " + ack.Subscriber
			}
			return tools.Answer{Allow: ans.Allow, Session: ans.Allow && ans.Session, Reason: ans.Reason, By: by}, nil
		}
	}
	return tools.Answer{}, fmt.Errorf("nobody on the bus answered on %s", AskTopic(q.Session))
}

var _ tools.Asker = Asker{}
