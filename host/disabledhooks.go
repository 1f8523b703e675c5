package host

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/supervisor"
)

// builtinHookPrefix starts the ID of every built-in hook.
const builtinHookPrefix = "weave."

// disabledHooks resolves config disabled_hooks against the hooks there
// are: a built-in is named by its ID (weave.verification-reminder) or its
// short name (verification-reminder); a plugin or command hook by its
// name. A name that is none of these is an error that lists the known
// ones, so that a typo never leaves a hook running unnoticed.
func disabledHooks(project string, cfg *config.Config, registered []hooks.Registered, sup *supervisor.Supervisor) ([]string, error) {
	if len(cfg.DisabledHooks) == 0 {
		return nil, nil
	}
	var known []string
	add := func(name string) {
		if name != "" && !slices.Contains(known, name) {
			known = append(known, name)
		}
	}
	// Every built-in, also those this config leaves off (work continuation).
	all := BuiltinHookConfig(project, cfg)
	all.WorkContinuation = true
	for _, r := range hooks.BuiltinHooks(all) {
		add(r.Info.Name)
	}
	for _, r := range registered {
		add(r.Info.Name)
	}
	if sup != nil {
		for _, e := range sup.Entries() {
			if e.Source != "builtin" {
				add(e.Name)
			}
		}
	}
	var out, unknown []string
	for _, name := range cfg.DisabledHooks {
		switch {
		case slices.Contains(known, name):
			out = append(out, name)
		case slices.Contains(known, builtinHookPrefix+name):
			out = append(out, builtinHookPrefix+name)
		default:
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		var short []string
		for _, k := range known {
			short = append(short, strings.TrimPrefix(k, builtinHookPrefix))
		}
		slices.Sort(short)
		return nil, fmt.Errorf("config disabled_hooks: no hook %s; the hooks are %s (a built-in may be written with or without %q)",
			quoteList(unknown), strings.Join(short, ", "), builtinHookPrefix)
	}
	return out, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
