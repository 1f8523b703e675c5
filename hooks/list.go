package hooks

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
)

// Listing is one row of `weave hooks list`.
type Listing struct {
	Name    string   `json:"name"`
	Version string   `json:"version,omitempty"`
	Source  string   `json:"source"`
	Events  []string `json:"events"`
	// Tools are the tools the hook is called for on each tool event it
	// narrows (see plugins.Info.Tools).
	Tools    map[string][]string `json:"tools,omitempty"`
	Priority int                 `json:"priority"`
	// Timeout is the effective timeout of one call; JSON has it as
	// timeout_ms.
	Timeout time.Duration `json:"-"`
	// Fail is closed, open, or "default" (closed on tool.execute.before,
	// open on other events).
	Fail     string `json:"fail"`
	Detail   string `json:"detail,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
}

// List describes hooks for `weave hooks list`, in run order (priority, then
// name), with the ones opts disables marked.
func List(hooks []Registered, opts Options) []Listing {
	sorted := slices.Clone(hooks)
	sortRegistered(sorted)
	def := opts.DefaultTimeout
	if def <= 0 {
		def = DefaultTimeout
	}
	out := make([]Listing, 0, len(sorted))
	for _, r := range sorted {
		l := Listing{
			Name:     r.Info.Name,
			Version:  r.Info.Version,
			Source:   r.Source,
			Events:   slices.Clone(r.Info.Events),
			Tools:    maps.Clone(r.Info.Tools),
			Priority: r.Info.Priority,
			Timeout:  r.Timeout,
			Fail:     string(r.Fail),
			Detail:   r.Detail,
			Disabled: slices.Contains(opts.DisabledHooks, r.Info.Name),
		}
		if l.Timeout <= 0 {
			l.Timeout = def
		}
		if l.Fail == "" {
			l.Fail = "default"
		}
		out = append(out, l)
	}
	return out
}

// EventLabels names the hook's events for a listing, each narrowed tool
// event with its tools as a matcher: "tool.execute.before[write|edit]".
func (l Listing) EventLabels() []string {
	out := make([]string, len(l.Events))
	for i, ev := range l.Events {
		out[i] = ev
		if tools, ok := l.Tools[ev]; ok {
			out[i] += "[" + strings.Join(tools, "|") + "]"
		}
	}
	return out
}

// MarshalJSON writes the timeout in milliseconds, the unit of every duration
// weave prints as JSON.
func (l Listing) MarshalJSON() ([]byte, error) {
	type plain Listing
	return json.Marshal(struct {
		plain
		TimeoutMS int64 `json:"timeout_ms"`
	}{plain(l), l.Timeout.Milliseconds()})
}
