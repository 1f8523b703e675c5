package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/weavehq/weave/plugins"
)

// DefaultMaxTurns bounds the model turns of one request, so that a model
// that keeps calling tools cannot run forever.
const DefaultMaxTurns = 50

// MaxRepeatedFailures is how often the same call (tool and arguments) may
// fail in one request before the loop stops: a model that repeats a failing
// call is not going to get a different answer.
const MaxRepeatedFailures = 3

// Overrides are a role's settings from config (agents.<name>.*), applied by
// NewModelAgent. The zero Overrides keeps the role as it is.
type Overrides struct {
	// Tools is the role's effective capability row (the gate's, after
	// config narrowed or widened it); nil keeps the role's own row.
	Tools []string
	// Model names the model for this role; "" means model.name.
	Model string
	// Temperature replaces the role's temperature when set.
	Temperature *float64
	// PromptAppend is added to the end of the role's system prompt.
	PromptAppend string
}

// ModelAgent is a role that thinks with a model. It asks the host's model
// for the next step, runs the tool calls the model asks for through the host
// (where the capability gate and the tool hooks apply), several at once when
// the model asks for several in one turn, feeds the results back, and stops
// when the model answers without calling a tool.
type ModelAgent struct {
	Role Role
	// Model overrides model.name for this role; "" means the host's default.
	Model string
	// MaxTurns bounds the model turns; zero means DefaultMaxTurns.
	MaxTurns int
}

// NewModelAgent returns role's agent with the config's overrides applied.
func NewModelAgent(role Role, o Overrides) ModelAgent {
	if o.Tools != nil {
		role.Tools = append([]string(nil), o.Tools...)
	}
	if o.Temperature != nil {
		role.Temperature = *o.Temperature
	}
	role.Prompt = appendPrompt(role.Prompt, o.PromptAppend)
	return ModelAgent{Role: role, Model: o.Model}
}

// AgentID is the built-in plugin ID of a role.
func AgentID(role string) string { return "weave.agent." + role }

// Info describes the agent as a plugin.
func (a ModelAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: AgentID(a.Role.Name), Version: "1", Kind: plugins.KindAgent, Role: a.Role.Name}, nil
}

// Handle runs the agent loop on req.Prompt.
func (a ModelAgent) Handle(ctx context.Context, h plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	chat := a.chat(req)
	return a.converse(ctx, h, &chat)
}

// chat is the model request that starts the loop on req: the role's
// system prompt and tools, the conversation so far, and req.Prompt.
func (a ModelAgent) chat(req plugins.AgentRequest) plugins.ChatRequest {
	temp := a.Role.Temperature
	model := a.Model
	if model == "" {
		model = a.Role.Model
	}
	return plugins.ChatRequest{
		Model:       model,
		System:      a.Role.Prompt,
		Messages:    append(Resumable(req.History), plugins.ChatMessage{Role: plugins.RoleUser, Content: req.Prompt}),
		Tools:       ToolSpecs(a.Role.Tools),
		Temperature: &temp,
	}
}

// converse runs the loop on chat until the model answers without a tool
// call, appending every turn to chat.Messages, so that a caller may add a
// message and converse again.
func (a ModelAgent) converse(ctx context.Context, h plugins.Host, chat *plugins.ChatRequest) (plugins.AgentResponse, error) {
	turns := a.MaxTurns
	if turns <= 0 {
		turns = DefaultMaxTurns
	}
	failures := map[string]int{}
	for range turns {
		resp, err := h.Complete(ctx, *chat)
		if err != nil {
			if ctx.Err() != nil {
				return plugins.AgentResponse{}, ctx.Err()
			}
			// No model, or the provider failed: a domain outcome the caller
			// shows, not a broken transport.
			return plugins.AgentResponse{Error: fmt.Sprintf("%s: %v", a.Role.Name, err)}, nil
		}
		msg := resp.Message
		msg.Role = plugins.RoleAssistant
		for i := range msg.ToolCalls {
			if msg.ToolCalls[i].ID == "" {
				msg.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", len(chat.Messages), i+1)
			}
		}
		chat.Messages = append(chat.Messages, msg)
		if len(msg.ToolCalls) == 0 {
			return plugins.AgentResponse{Output: msg.Content, Done: true}, nil
		}
		results, err := runCalls(ctx, h, msg.ToolCalls)
		if err != nil {
			return plugins.AgentResponse{}, err
		}
		var stuck string
		for i, call := range msg.ToolCalls {
			res := results[i]
			chat.Messages = append(chat.Messages, plugins.ChatMessage{
				Role: plugins.RoleTool, ToolCallID: call.ID, Content: toolResultText(res), IsError: res.IsError || res.Denied,
			})
			key := callKey(call)
			if !res.IsError && !res.Denied {
				delete(failures, key)
				continue
			}
			failures[key]++
			if failures[key] >= MaxRepeatedFailures && stuck == "" {
				stuck = fmt.Sprintf("%s stopped: the same call failed %d times (%s): %s",
					a.Role.Name, failures[key], shortCall(call), firstLine(res.Output))
			}
		}
		if stuck != "" {
			return plugins.AgentResponse{Error: stuck}, nil
		}
	}
	return plugins.AgentResponse{Error: fmt.Sprintf("%s stopped after %d model turns without finishing", a.Role.Name, turns)}, nil
}

// Resumable returns history fit to continue: a conversation cut off in
// the middle of a turn (the person interrupted it, or the process died)
// may end with tool calls that have no results, or results of calls it
// no longer holds, which providers refuse. Each unanswered call gets a
// result that says it did not finish; results without their call are
// dropped. The history given is not changed.
func Resumable(history []plugins.ChatMessage) []plugins.ChatMessage {
	out := make([]plugins.ChatMessage, 0, len(history)+1)
	open := map[string]bool{}
	var pending []string // open call IDs in order
	closeOpen := func() {
		for _, id := range pending {
			if open[id] {
				out = append(out, plugins.ChatMessage{Role: plugins.RoleTool, ToolCallID: id, IsError: true,
					Content: "This call was interrupted and did not finish."})
			}
		}
		open, pending = map[string]bool{}, nil
	}
	for _, m := range history {
		switch m.Role {
		case plugins.RoleTool:
			if !open[m.ToolCallID] {
				continue
			}
			delete(open, m.ToolCallID)
			out = append(out, m)
			continue
		case plugins.RoleAssistant:
			closeOpen()
			out = append(out, m)
			for _, c := range m.ToolCalls {
				open[c.ID] = true
				pending = append(pending, c.ID)
			}
			continue
		}
		closeOpen()
		out = append(out, m)
	}
	closeOpen()
	return out
}

// runCalls runs one turn's tool calls at once and returns their results in
// the calls' order. A Go error from the host (the transport failed) ends
// the request once every call has returned.
func runCalls(ctx context.Context, h plugins.Host, calls []plugins.ToolCall) ([]plugins.ToolResult, error) {
	results := make([]plugins.ToolResult, len(calls))
	errs := make([]error, len(calls))
	if len(calls) == 1 {
		results[0], errs[0] = h.CallTool(ctx, calls[0])
		return results, errs[0]
	}
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { results[i], errs[i] = h.CallTool(ctx, call) })
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// toolResultText is what the model reads for a result. A refusal reads as
// the host wrote it, which names its cause exactly ("denied by the
// capability matrix (thread has no write)", "blocked by hook <name>:
// <reason>", "refused: ... is host-owned (...)"): nothing is added that the
// model could take for another cause. A refusal in other words (a plugin's)
// is marked as one.
func toolResultText(res plugins.ToolResult) string {
	out := res.Output
	if res.Denied {
		if out == "" {
			out = "no reason given"
		}
		for _, w := range []string{"denied", "blocked", "refused", "webfetch refused"} {
			if strings.HasPrefix(out, w) {
				return out
			}
		}
		return "This call was refused and did not run: " + out
	}
	if res.IsError && out == "" {
		if res.ExitCode != 0 {
			return fmt.Sprintf("The call failed with exit code %d and no output.", res.ExitCode)
		}
		return "The call failed with no output."
	}
	return out
}

// callKey identifies a call by its tool and arguments; encoding/json sorts
// map keys, so equal arguments give equal keys.
func callKey(c plugins.ToolCall) string {
	b, _ := json.Marshal(c.Args)
	return c.Tool + " " + string(b)
}

func shortCall(c plugins.ToolCall) string {
	s := callKey(c)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

var _ plugins.Agent = ModelAgent{}
