package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// ClaudeHooks is the "hooks" object of a Claude Code settings file: event
// name -> matcher groups. Users paste theirs into Weave's config.
type ClaudeHooks map[string][]ClaudeMatcherGroup

// ClaudeMatcherGroup is one matcher and its hooks.
type ClaudeMatcherGroup struct {
	Matcher string            `json:"matcher,omitempty" yaml:"matcher,omitempty" mapstructure:"matcher"`
	Hooks   []ClaudeHookEntry `json:"hooks" yaml:"hooks" mapstructure:"hooks"`
}

// ClaudeHookEntry is one hook of a matcher group. Timeout is in seconds, as
// in Claude Code.
type ClaudeHookEntry struct {
	Type    string  `json:"type" yaml:"type" mapstructure:"type"`
	Command string  `json:"command" yaml:"command" mapstructure:"command"`
	Timeout float64 `json:"timeout,omitempty" yaml:"timeout,omitempty" mapstructure:"timeout"`
}

// ParseClaudeHooks reads a Claude Code settings file's JSON: either the
// whole file ({"hooks": {...}}) or just its hooks object.
func ParseClaudeHooks(b []byte) (ClaudeHooks, error) {
	var whole struct {
		Hooks ClaudeHooks `json:"hooks"`
	}
	if err := json.Unmarshal(b, &whole); err == nil && whole.Hooks != nil {
		return whole.Hooks, nil
	}
	var h ClaudeHooks
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("read Claude Code hooks: %w (expected {\"hooks\": {\"PreToolUse\": [{\"matcher\": ..., \"hooks\": [...]}]}})", err)
	}
	return h, nil
}

// Specs turns the settings into command hook specs, in a fixed order: by
// event (as ClaudeEventNames lists them), then as written. Unnamed specs
// get their names from CommandHooks.
func (c ClaudeHooks) Specs() ([]CommandSpec, error) {
	events := make([]string, 0, len(c))
	for ev := range c {
		events = append(events, ev)
	}
	order := ClaudeEventNames()
	sort.Slice(events, func(i, j int) bool {
		a, b := slices.Index(order, events[i]), slices.Index(order, events[j])
		if a != b {
			return a < b
		}
		return events[i] < events[j]
	})
	var specs []CommandSpec
	var errs []error
	for _, ev := range events {
		if !slices.Contains(order, ev) {
			errs = append(errs, fmt.Errorf("hooks.%s: unsupported event (supported: %s)", ev, strings.Join(order, ", ")))
			continue
		}
		for gi, g := range c[ev] {
			for hi, h := range g.Hooks {
				where := fmt.Sprintf("hooks.%s[%d].hooks[%d]", ev, gi, hi)
				if h.Type != "" && !slices.Contains(ClaudeHookTypes(), h.Type) {
					errs = append(errs, fmt.Errorf("%s: type %q is not supported; only \"command\" hooks run in Weave", where, h.Type))
					continue
				}
				if h.Timeout < 0 {
					errs = append(errs, fmt.Errorf("%s: negative timeout %v", where, h.Timeout))
					continue
				}
				specs = append(specs, CommandSpec{
					Event:   ev,
					Matcher: g.Matcher,
					Command: h.Command,
					Timeout: time.Duration(h.Timeout * float64(time.Second)),
				})
			}
		}
	}
	return specs, errors.Join(errs...)
}

// Find returns the hook named name, for `weave hooks test NAME`; a
// built-in hook may be named without its "weave." prefix.
func Find(hooks []Registered, name string) (Registered, error) {
	names := make([]string, 0, len(hooks))
	for _, r := range hooks {
		if r.Info.Name == name {
			return r, nil
		}
		names = append(names, r.Info.Name)
	}
	for _, r := range hooks {
		if r.Info.Name == "weave."+name {
			return r, nil
		}
	}
	sort.Strings(names)
	return Registered{}, fmt.Errorf("no hook named %q (have: %s); `weave hooks list` shows them", name, strings.Join(names, ", "))
}
