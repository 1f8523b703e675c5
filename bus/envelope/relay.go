package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Kinds of relay output.
const (
	OutputRelayActions = "relay_actions"
	OutputTaskDone     = "task_done"
	// OutputLocal is output that is not JSON: a response for the local
	// user, which ends the relay.
	OutputLocal = "local"
)

// RelayAction is one action of relay_actions output.
type RelayAction struct {
	Type    string `json:"type"`
	Dst     string `json:"dst"`
	Text    string `json:"text,omitempty"`
	Plan    *Plan  `json:"plan,omitempty"`
	Command string `json:"command,omitempty"`
	Args    string `json:"args,omitempty"`
}

// RelayOutput is a relaying owner's model output, parsed.
type RelayOutput struct {
	Kind    string        // OutputRelayActions, OutputTaskDone or OutputLocal
	Actions []RelayAction // relay_actions
	Summary string        // task_done
	Text    string        // local: the output as written
}

// ParseRelayOutput reads the model output of one relay turn. Output that is
// not a JSON object is a local response (Kind OutputLocal, no error). A JSON
// object must be a valid relay_actions (non-empty actions) or task_done;
// anything else is an error the runtime can show the model.
func ParseRelayOutput(output string) (RelayOutput, error) {
	trimmed := bytes.TrimSpace([]byte(output))
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return RelayOutput{Kind: OutputLocal, Text: output}, nil
	}
	var top struct {
		Type    string          `json:"type"`
		Actions json.RawMessage `json:"actions"`
		Summary *string         `json:"summary"`
	}
	if err := json.Unmarshal(trimmed, &top); err != nil {
		return RelayOutput{}, fmt.Errorf("relay output: %w", err)
	}
	switch top.Type {
	case OutputTaskDone:
		out := RelayOutput{Kind: OutputTaskDone}
		if top.Summary != nil {
			out.Summary = *top.Summary
		}
		return out, nil
	case OutputRelayActions:
	case "":
		return RelayOutput{}, fmt.Errorf(`relay output has no "type"; use "relay_actions" or "task_done"`)
	default:
		return RelayOutput{}, fmt.Errorf(`relay output type %q is unknown; use "relay_actions" or "task_done"`, top.Type)
	}
	var actions []RelayAction
	if len(top.Actions) > 0 && !bytes.Equal(top.Actions, []byte("null")) {
		if err := json.Unmarshal(top.Actions, &actions); err != nil {
			return RelayOutput{}, fmt.Errorf("relay_actions: actions must be an array of action objects: %w", err)
		}
	}
	if len(actions) == 0 {
		return RelayOutput{}, fmt.Errorf("relay_actions needs a non-empty actions array; to end the relay send task_done")
	}
	for i, a := range actions {
		if err := checkRelayAction(a); err != nil {
			return RelayOutput{}, fmt.Errorf("relay_actions: actions[%d]: %w", i, err)
		}
	}
	return RelayOutput{Kind: OutputRelayActions, Actions: actions}, nil
}

func checkRelayAction(a RelayAction) error {
	if strings.TrimSpace(a.Dst) == "" {
		return fmt.Errorf("needs a dst (agent id or name)")
	}
	switch a.Type {
	case ActionMessage:
		if strings.TrimSpace(a.Text) == "" {
			return fmt.Errorf("message to %q needs a non-empty text", a.Dst)
		}
		if a.Plan != nil && len(a.Plan.Steps) == 0 {
			return fmt.Errorf("message to %q has a plan without steps", a.Dst)
		}
	case ActionControl:
		switch a.Command {
		case CommandNew, CommandInterrupt, CommandCompact, CommandReview:
		default:
			return fmt.Errorf("control command %q is not one of new, interrupt, compact, review", a.Command)
		}
	case "":
		return fmt.Errorf(`needs a type: "message" or "control"`)
	default:
		return fmt.Errorf(`type %q is not "message" or "control"`, a.Type)
	}
	return nil
}

// MayRelay is the loop guard's rule for incoming messages: user messages
// (and messages without a kind) may be relayed onward; replies, control and
// system messages never are, so two agents cannot ping-pong.
func MayRelay(kind string) bool { return kind == KindUser || kind == "" }

// Groups turns relay actions into action.submit payloads the way senders
// do: one group per target, in order of each target's first action; within
// a group the actions keep their order, and action_index keeps each action's
// place in the original list so results can be matched after the split.
// Messages are of kind user. newID makes group and action ids.
func (o RelayOutput) Groups(newID func() string, ctx *Context, taskID string) []Submit {
	var groups []Submit
	at := make(map[string]int)
	for i, a := range o.Actions {
		g, ok := at[a.Dst]
		if !ok {
			g = len(groups)
			at[a.Dst] = g
			groups = append(groups, Submit{GroupID: newID(), Context: ctx, TaskID: taskID})
		}
		act := Action{Type: a.Type, Dst: a.Dst, ActionID: newID(), ActionIndex: IntPtr(i)}
		if a.Type == ActionMessage {
			act.Kind, act.Text, act.Plan = KindUser, a.Text, a.Plan
		} else {
			act.Command, act.Args = a.Command, a.Args
		}
		groups[g].Actions = append(groups[g].Actions, act)
	}
	return groups
}
