package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/weavehq/weave/plugins"
)

// ContextWindowMonitorID names the context-window monitor.
const ContextWindowMonitorID = "weave.context-window-monitor"

// Default context-window thresholds.
const (
	DefaultContextWarnRatio    = 0.80
	DefaultContextCompactRatio = 0.95
)

// ContextWindowMonitor watches token use, reported in Event.Data as
// {"tokens_used": n, "context_window": m} on the chat.message the host
// publishes after each model answer. Tool events carry no token use, so the
// monitor is not called for them: a runbook's tool calls cost it nothing.
// At the warn ratio it tells the agent to be economical; at the compact
// ratio, where the host compacts the conversation, it tells the agent so.
// Each threshold speaks once per
// session, and again only after the session has been compacted.
type ContextWindowMonitor struct {
	warn, compact float64
	mu            sync.Mutex
	// level is the highest threshold announced per session: 1 warn, 2 compact.
	level map[string]int
}

// NewContextWindowMonitor returns the monitor; zero ratios take the defaults.
func NewContextWindowMonitor(warn, compact float64) *ContextWindowMonitor {
	if warn <= 0 {
		warn = DefaultContextWarnRatio
	}
	if compact <= 0 {
		compact = DefaultContextCompactRatio
	}
	return &ContextWindowMonitor{warn: warn, compact: compact, level: make(map[string]int)}
}

// CompactRatio is the share of the context window at which the monitor
// asks for compaction: the ratio the host compacts at.
func (h *ContextWindowMonitor) CompactRatio() float64 { return h.compact }

func (h *ContextWindowMonitor) info() plugins.Info {
	return builtinInfo(ContextWindowMonitorID, PriorityContext,
		plugins.EventChatMessage, plugins.EventSessionCompacted, plugins.EventSessionEnd)
}

func (h *ContextWindowMonitor) registered() Registered {
	return builtinRegistered(h, h.info(), FailDefault)
}

// Info describes the hook.
func (h *ContextWindowMonitor) Info(context.Context) (plugins.Info, error) { return h.info(), nil }

// Handle checks the token use of one event.
func (h *ContextWindowMonitor) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch ev.Name {
	case plugins.EventSessionCompacted, plugins.EventSessionEnd:
		delete(h.level, ev.SessionID)
		return allow, nil
	}
	used, ok1 := number(ev.Data["tokens_used"])
	window, ok2 := number(ev.Data["context_window"])
	if !ok1 || !ok2 || window <= 0 || used < 0 {
		return allow, nil
	}
	ratio := used / window
	pct := int(math.Floor(ratio * 100))
	switch {
	case ratio >= h.compact && h.level[ev.SessionID] < 2:
		h.level[ev.SessionID] = 2
		// The host compacts before the next model call: the model is told
		// what happened, not asked to summarise.
		return withContext(fmt.Sprintf("Context window %d%% full (%.0f of %.0f tokens). The conversation is being compacted: "+
			"its earlier part is replaced by a summary. Carry on with the current step; do not start over.", pct, used, window)), nil
	case ratio >= h.warn && ratio < h.compact && h.level[ev.SessionID] < 1:
		h.level[ev.SessionID] = 1
		return withContext(fmt.Sprintf("Context window %d%% full (%.0f of %.0f tokens). Be economical: "+
			"read only what you need and avoid large outputs; compaction will be needed at %.0f%%.", pct, used, window, h.compact*100)), nil
	}
	return allow, nil
}

// number reads a JSON number (float64 after decoding) or a Go integer.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

var _ plugins.Hook = (*ContextWindowMonitor)(nil)
