package chat

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/plugins"
)

// ModelFallback says an agent's model failed in a way another model may
// not (rate limited or failing past its retries, overloaded, out of
// quota, no such model, unreachable) and the call moved to the next entry
// of its fallback chain: Fallback says from which, to which, and why.
const ModelFallback = "model.fallback"

// Fallback is one switch along a fallback chain, on model.fallback events
// and the transcript's fallback lines.
type Fallback struct {
	// From and To name the models: an entry of models, or the model
	// section's model name.
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// Line says the switch in a few words, for people.
func (f Fallback) Line() string {
	return fmt.Sprintf("model %s %s; falling back to %s", f.From, f.Reason, f.To)
}

// lineFallback is a transcript line that records a Fallback.
const lineFallback = "fallback"

// fallbacks are the fallback chains config names: each agent's own
// (agents.<name>.fallback, a category's for its Shuttle, a custom
// agent's), else model.fallback.
type fallbacks struct {
	global  []string
	byAgent map[string][]string
}

func newFallbacks(cfg *config.Config) fallbacks {
	f := fallbacks{global: cfg.Model.Fallback, byAgent: map[string][]string{}}
	for name, a := range cfg.Agents {
		if a.Fallback != nil {
			f.byAgent[name] = a.Fallback
		}
	}
	for name, c := range cfg.Categories {
		if c.Fallback != nil {
			f.byAgent[agents.CategoryAgent(name)] = c.Fallback
		}
	}
	for name, c := range cfg.CustomAgents {
		if c.Fallback != nil {
			f.byAgent[name] = c.Fallback
		}
	}
	return f
}

// of is the chain of agent (a role's name, as the door is called with).
func (f fallbacks) of(agent string) []string {
	if c, ok := f.byAgent[agent]; ok {
		return c
	}
	return f.global
}

// chain is the routes a call of agent naming model may take, in order:
// its model, then its fallbacks (each once, its model left out).
func (d *Door) chain(agent, modelName string) []model.Route {
	first := d.set.Route(modelName)
	out := []model.Route{first}
	for _, name := range d.fallback.of(agent) {
		r, ok := d.set.Entry(name)
		if !ok || slices.ContainsFunc(out, func(o model.Route) bool { return o.Label == r.Label && o.Model == r.Model }) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// walk has the first model of the call's chain that can answer answer it.
// A model that fails with a reason to leave it (model.FallbackReason)
// hands the call to the next, and the conversation stays there: its next
// calls start at the model it fell back to. The request is the contract's
// (plugins.ChatRequest) whatever the wire: each provider converts the
// whole conversation, tool calls and results included, so a call moves
// between vendors intact. reset is called when the answer streamed so far
// is void.
func (d *Door) walk(ctx context.Context, session, agent string, req plugins.ChatRequest, onDelta func(model.Delta), reset func()) (plugins.ChatResponse, error) {
	key := [2]string{session, agent}
	chain := d.chain(agent, req.Model)
	d.mu.Lock()
	stuck := d.stuck[key]
	d.mu.Unlock()
	start := 0
	if stuck != "" {
		if i := slices.IndexFunc(chain, func(r model.Route) bool { return r.Label == stuck }); i > 0 {
			start = i
		}
	}
	var lastErr error
	for i := start; i < len(chain); i++ {
		r := chain[i]
		var resp plugins.ChatResponse
		err := r.Err
		if err == nil {
			call := req
			call.Model = r.Model
			resp, err = r.Complete.Complete(ctx, call, onDelta)
			if err == nil {
				return resp, nil
			}
		}
		lastErr = err
		reason := model.FallbackReason(ctx, err)
		if r.Err != nil {
			reason = "cannot be used"
		}
		if reason == "" || i == len(chain)-1 {
			if i > start {
				return resp, fmt.Errorf("fell back from %s to %s, which failed too: %w", chain[start].Label, r.Label, err)
			}
			return resp, err
		}
		f := Fallback{From: r.Label, To: chain[i+1].Label, Reason: reason}
		d.mu.Lock()
		d.stuck[key] = f.To
		d.mu.Unlock()
		if reset != nil {
			reset()
		}
		d.logger.Warn("model fell back", "agent", agent, "session", session, "from", f.From, "to", f.To, "reason", f.Reason, "err", err)
		if err := d.sessions.fallback(session, agent, f); err != nil {
			d.logger.Warn("write the session transcript", "session", session, "err", err)
		}
		d.emit(ctx, Event{Type: ModelFallback, Session: session, Agent: agent, Fallback: &f, Error: err.Error()})
	}
	return plugins.ChatResponse{}, lastErr
}

// fallback appends a fallback line to session's transcript.
func (l *sessionLog) fallback(session, agent string, f Fallback) error {
	if l == nil || session == "" || !sessionIDRE.MatchString(session) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.append(session, []SessionLine{{Time: time.Now().UTC(), Type: lineFallback, Agent: agent, Fallback: &f}})
}
