package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"

	"github.com/weavehq/weave/host/budget"
	"github.com/weavehq/weave/plugins"
)

// Delegator hands a task to another agent and returns its answer. caller is
// the delegating agent; the delegated one acts as caller.Delegated(agent)
// in session, the child session the task tool opened for it (see
// ChildSession).
type Delegator interface {
	Delegate(ctx context.Context, caller Caller, session, agent, prompt string) (string, error)
}

// WithDelegator sets who carries out task calls (over a bus, say). Without
// one, and without WithAgents, task answers that delegation is not
// available.
func WithDelegator(d Delegator) Option { return func(t *Tools) { t.delegator = d } }

// WithSessionLinks has f record each delegation's child session as the
// task tool opens it: parent is the delegating session, agent the
// delegating agent, callID the model's id of the task call.
func WithSessionLinks(f func(parent, child, agent, callID string)) Option {
	return func(t *Tools) { t.link = f }
}

// ChildSession names the session a delegation to agent from parent runs
// in: under its parent's name, so that a listing groups them, with a
// random suffix, since one session may delegate to the same agent often.
func ChildSession(parent, agent string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	suffix := agent + "-" + hex.EncodeToString(b[:])
	if parent == "" {
		return suffix
	}
	if len(parent)+1+len(suffix) > maxSessionID {
		// A deep chain keeps its root's name.
		parent, _, _ = strings.Cut(parent, ".")
		if len(parent)+1+len(suffix) > maxSessionID {
			return suffix
		}
	}
	return parent + "." + suffix
}

// maxSessionID is the longest session id the host keeps a transcript for.
const maxSessionID = 128

// WithAgents has task calls carried out in this process: agent returns the
// plugin of a role, which handles the prompt with these tools bound to the
// extended caller chain.
func WithAgents(agent func(role string) plugins.Agent) Option {
	return func(t *Tools) { t.delegator = &agentDelegator{agent: agent, tools: t} }
}

// agentDelegator carries out the task tool in this process: the delegated
// agent's plugin handles the prompt with host services bound to the
// extended caller chain, so that the capability gate's ceiling holds
// through the delegation. It is made by WithAgents, tied to its Tools.
type agentDelegator struct {
	agent func(role string) plugins.Agent
	tools *Tools
}

// Delegate implements Delegator.
func (d *agentDelegator) Delegate(ctx context.Context, caller Caller, session, agent, prompt string) (string, error) {
	if d.agent == nil {
		return "", errors.New("delegation is not wired in this run")
	}
	logger := d.tools.log
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	callee := caller.Delegated(agent)
	services := d.tools.Services(callee, session, Scope{}, logger.With("agent", agent, "chain", callee.String()))
	if complete := services.ModelFunc; complete != nil {
		// The delegated agent's prompt is the delegating model's text, not
		// the person's: its chat.message hooks see source "delegation".
		// Its calls are the delegating task's too, for that task's budget:
		// a plugin's call comes back in a context of its own.
		task := ctx
		services.ModelFunc = func(ctx context.Context, req plugins.ChatRequest) (plugins.ChatResponse, error) {
			return complete(budget.Carry(WithMessageSource(ctx, SourceDelegation), task), req)
		}
	}
	resp, err := d.agent(agent).Handle(ctx, services, plugins.AgentRequest{SessionID: session, Prompt: prompt})
	if err != nil {
		return "", err
	}
	if resp.Error != "" {
		return "", errors.New(resp.Error)
	}
	return resp.Output, nil
}

var _ Delegator = (*agentDelegator)(nil)
