package config

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// layerPart is what one file says about the map and list sections, already
// validated. Agents and categories keep only the fields the file sets, so
// a later layer overrides field by field.
type layerPart struct {
	agents     map[string]map[string]any
	categories map[string]map[string]any
	custom     map[string]map[string]any
	hooks      map[string][]HookMatcher
	plugins    []PluginConfig
	mcp        map[string]MCPServerConfig
	perms      *PermissionsConfig
	models     map[string]map[string]any
	prices     map[string]map[string]any
}

// parseLayer validates one file's keys. It returns the scalar values by
// dotted key, converted to their Go types, and the sections.
func parseLayer(el *errorList, byName map[string]Key, raw map[string]any) (map[string]any, *layerPart) {
	scalars := map[string]any{}
	part := &layerPart{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			full, val := join(prefix, name), m[name]
			if k, ok := byName[full]; ok {
				if val == nil {
					continue // "key:" with no value leaves it unset
				}
				switch full {
				case "agents":
					part.agents = parseNamedFields(el, full, val, agentNames, agentFields)
				case "categories":
					part.categories = parseNamedFields(el, full, val, nil, categoryFields)
				case "custom_agents":
					part.custom = parseNamedFields(el, full, val, nil, customFields)
				case "hooks":
					part.hooks = parseHooks(el, val)
				case "plugins":
					part.plugins = parsePlugins(el, val)
				case "mcp_servers":
					part.mcp = parseMCPServers(el, val)
				case "models":
					part.models = parseModels(el, val)
				case "permissions":
					part.perms = parsePermissions(el, val)
				case "prices":
					part.prices = parseNamedFields(el, full, val, nil, priceFields)
				default:
					if v, ok := convertKey(el, k, val); ok {
						scalars[full] = v
					}
				}
				continue
			}
			kids := children(full)
			if len(kids) == 0 {
				el.unknown(prefix, name, children(prefix))
				continue
			}
			if val == nil {
				continue
			}
			sub, ok := val.(map[string]any)
			if !ok {
				el.add(full, "want a mapping with keys %s, got %s", strings.Join(kids, ", "), describe(val))
				continue
			}
			walk(full, sub)
		}
	}
	walk("", raw)
	return scalars, part
}

// children lists the names one level below prefix ("" is the top).
func children(prefix string) []string {
	var out []string
	for _, k := range keyTable() {
		rest := k.Name
		if prefix != "" {
			var ok bool
			if rest, ok = strings.CutPrefix(k.Name, prefix+"."); !ok {
				continue
			}
		}
		first, _, _ := strings.Cut(rest, ".")
		if !slices.Contains(out, first) {
			out = append(out, first)
		}
	}
	return out
}

// field is one field of an entry in a map or list section.
type field struct {
	name    string
	kind    Kind
	check   func(any) string
	allowed []string // for KindStrings: each item must be one of these
}

var agentFields = []field{
	{name: "tools", kind: KindStrings, allowed: toolNames},
	{name: "allow_widen", kind: KindBool},
	{name: "model", kind: KindString},
	{name: "fallback", kind: KindStrings, check: entryNames},
	{name: "temperature", kind: KindFloat, check: temperature},
	{name: "prompt_append", kind: KindString},
	{name: "mcp", kind: KindStrings},
}

var categoryFields = []field{
	{name: "model", kind: KindString},
	{name: "fallback", kind: KindStrings, check: entryNames},
	{name: "temperature", kind: KindFloat, check: temperature},
	{name: "tools", kind: KindStrings, allowed: toolNames},
	{name: "prompt_append", kind: KindString},
	{name: "skills", kind: KindStrings},
}

var customFields = []field{
	{name: "description", kind: KindString},
	{name: "prompt", kind: KindString},
	{name: "prompt_file", kind: KindString, check: nonEmpty},
	{name: "mode", kind: KindString, check: agentMode},
	{name: "tools", kind: KindStrings, allowed: toolNames},
	{name: "model", kind: KindString},
	{name: "fallback", kind: KindStrings, check: entryNames},
	{name: "temperature", kind: KindFloat, check: temperature},
	{name: "delegates", kind: KindStrings},
	{name: "mcp", kind: KindStrings},
}

func agentMode(v any) string {
	if s := v.(string); s != "primary" && s != "subagent" {
		return oneOf(s, []string{"primary", "subagent"})
	}
	return ""
}

func temperature(v any) string {
	if f := v.(float64); f < 0 || f > 2 {
		return fmt.Sprintf("%v is outside [0,2]", f)
	}
	return ""
}

// parseFields validates one entry's fields and returns those it sets.
func parseFields(el *errorList, prefix string, raw any, fields []field) map[string]any {
	out := map[string]any{}
	if raw == nil {
		return out
	}
	m, ok := raw.(map[string]any)
	if !ok {
		el.add(prefix, "want a mapping of fields (%s), got %s", fieldNames(fields), describe(raw))
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		i := slices.IndexFunc(fields, func(f field) bool { return f.name == name })
		if i < 0 {
			el.unknown(prefix, name, strings.Split(fieldNames(fields), ", "))
			continue
		}
		f, key := fields[i], prefix+"."+name
		if m[name] == nil {
			continue
		}
		val, problem := convert(f.kind, m[name])
		if problem == "" && f.check != nil {
			problem = f.check(val)
		}
		if problem == "" && f.allowed != nil {
			for _, s := range val.([]string) {
				if !slices.Contains(f.allowed, s) {
					problem = oneOf(s, f.allowed) + didYouMean(s, f.allowed)
					break
				}
			}
		}
		if problem != "" {
			el.add(key, "%s", problem)
			continue
		}
		out[name] = val
	}
	return out
}

func fieldNames(fields []field) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// parseNamedFields validates a map of name -> entry; allowed, when set,
// restricts the names.
func parseNamedFields(el *errorList, key string, raw any, allowed []string, fields []field) map[string]map[string]any {
	m, ok := raw.(map[string]any)
	if !ok {
		el.add(key, "want a mapping of names to settings, got %s", describe(raw))
		return nil
	}
	out := map[string]map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if allowed != nil && !slices.Contains(allowed, name) {
			el.add(key+"."+name, "unknown name; want one of %s%s", strings.Join(allowed, ", "), didYouMean(name, allowed))
			continue
		}
		if strings.TrimSpace(name) == "" {
			el.add(key, "a name must not be empty")
			continue
		}
		if f := parseFields(el, key+"."+name, m[name], fields); f != nil {
			out[name] = f
		}
	}
	return out
}

// parseHooks validates Claude Code's hooks shape.
func parseHooks(el *errorList, raw any) map[string][]HookMatcher {
	m, ok := raw.(map[string]any)
	if !ok {
		el.add("hooks", "want a mapping of event names (PreToolUse, PostToolUse, ...) to lists, got %s", describe(raw))
		return nil
	}
	out := map[string][]HookMatcher{}
	for _, event := range slices.Sorted(maps.Keys(m)) {
		key := "hooks." + event
		if !slices.Contains(hookEvents, event) {
			el.add(key, "unknown hook event: Claude Code documents none by this name%s", didYouMean(event, hookEvents))
			continue
		}
		if m[event] == nil {
			continue
		}
		list, ok := m[event].([]any)
		if !ok {
			el.add(key, "want a list of {matcher, hooks}, got %s", describe(m[event]))
			continue
		}
		for i, item := range list {
			if hm, ok := parseMatcher(el, fmt.Sprintf("%s[%d]", key, i), item); ok {
				out[event] = append(out[event], hm)
			}
		}
	}
	return out
}

func parseMatcher(el *errorList, key string, raw any) (HookMatcher, bool) {
	var hm HookMatcher
	m, ok := raw.(map[string]any)
	if !ok {
		el.add(key, "want a mapping with matcher and hooks, got %s", describe(raw))
		return hm, false
	}
	n := len(el.errs)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		switch name {
		case "matcher":
			s, ok := m[name].(string)
			if !ok && m[name] != nil {
				el.add(key+".matcher", "want a string (a tool name or regular expression), got %s", describe(m[name]))
				continue
			}
			if s != "" && s != "*" {
				if _, err := regexp.Compile(s); err != nil {
					el.add(key+".matcher", "%q is not a valid regular expression: %v", s, err)
					continue
				}
			}
			hm.Matcher = s
		case "hooks":
			list, ok := m[name].([]any)
			if !ok {
				el.add(key+".hooks", "want a list of {type: command, command, timeout}, got %s", describe(m[name]))
				continue
			}
			for j, h := range list {
				if ch, ok := parseCommandHook(el, fmt.Sprintf("%s.hooks[%d]", key, j), h); ok {
					hm.Hooks = append(hm.Hooks, ch)
				}
			}
		default:
			el.unknown(key, name, []string{"matcher", "hooks"})
		}
	}
	if _, ok := m["hooks"]; !ok {
		el.add(key, "missing hooks: a list of {type: command, command: ...}")
	}
	return hm, len(el.errs) == n
}

const defaultHookTimeout = 60 // seconds, as in Claude Code

// commandHookKeys are the keys of one hook, as Claude Code documents them
// (prompt, model, server, tool and input belong to the types Weave does not
// run).
var commandHookKeys = []string{"type", "command", "url", "headers", "allowedEnvVars", "timeout", "if", "async", "once", "statusMessage",
	"prompt", "model", "server", "tool", "input"}

func parseCommandHook(el *errorList, key string, raw any) (CommandHook, bool) {
	ch := CommandHook{Timeout: defaultHookTimeout}
	m, ok := raw.(map[string]any)
	if !ok {
		el.add(key, "want a mapping {type: command, command, timeout}, got %s", describe(raw))
		return ch, false
	}
	n := len(el.errs)
	str := func(name string) (string, bool) {
		s, ok := m[name].(string)
		if !ok {
			el.add(key+"."+name, "want a string, got %s", describe(m[name]))
		}
		return s, ok
	}
	boolean := func(name string) bool {
		b, ok := m[name].(bool)
		if !ok {
			el.add(key+"."+name, "want true or false, got %s", describe(m[name]))
		}
		return b
	}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		val := m[name]
		switch name {
		case "type":
			s, ok := val.(string)
			if !ok || !slices.Contains(hookTypes, s) {
				el.add(key+".type", "%s is not supported; want command or http (Claude Code's prompt, agent and mcp_tool are accepted but do not run)", describe(val))
				continue
			}
			ch.Type = s
		case "command":
			s, ok := val.(string)
			if !ok || strings.TrimSpace(s) == "" {
				el.add(key+".command", "want a non-empty command line, got %s", describe(val))
				continue
			}
			ch.Command = s
		case "url":
			s, ok := val.(string)
			if u, err := url.Parse(s); !ok || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				el.add(key+".url", "want an http:// or https:// URL, got %s", describe(val))
				continue
			}
			ch.URL = s
		case "headers":
			hm, ok := val.(map[string]any)
			if !ok {
				el.add(key+".headers", "want a mapping of header names to values, got %s", describe(val))
				continue
			}
			ch.Headers = map[string]string{}
			for k, v := range hm {
				s, ok := v.(string)
				if !ok {
					el.add(key+".headers."+k, "want a string, got %s", describe(v))
					continue
				}
				ch.Headers[k] = s
			}
		case "allowedEnvVars":
			list, ok := val.([]any)
			if !ok {
				el.add(key+".allowedEnvVars", "want a list of variable names, got %s", describe(val))
				continue
			}
			for _, v := range list {
				s, ok := v.(string)
				if !ok || s == "" {
					el.add(key+".allowedEnvVars", "want variable names, got %s", describe(v))
					continue
				}
				ch.AllowedEnvVars = append(ch.AllowedEnvVars, s)
			}
		case "timeout":
			t, ok := toInt(val)
			if !ok || t <= 0 {
				el.add(key+".timeout", "want a positive number of seconds, got %s", describe(val))
				continue
			}
			ch.Timeout = t
		case "if":
			if s, ok := str(name); ok {
				ch.If = s
			}
		case "statusMessage":
			if s, ok := str(name); ok {
				ch.StatusMessage = s
			}
		case "async":
			ch.Async = boolean(name)
		case "once":
			ch.Once = boolean(name)
		case "prompt", "model", "server", "tool", "input":
			// The keys of the types Weave does not run: accepted, unused.
		default:
			el.unknown(key, name, commandHookKeys)
		}
	}
	switch _, has := m["type"]; {
	case !has:
		el.add(key+".type", "missing; want command or http")
	case ch.Type == "command" && ch.Command == "":
		if _, ok := m["command"]; !ok {
			el.add(key+".command", "missing; want the command line to run")
		}
	case ch.Type == "http" && ch.URL == "":
		if _, ok := m["url"]; !ok {
			el.add(key+".url", "missing; want the URL to POST the event to")
		}
	}
	return ch, len(el.errs) == n
}

// parsePlugins validates the plugins list.
func parsePlugins(el *errorList, raw any) []PluginConfig {
	list, ok := raw.([]any)
	if !ok {
		el.add("plugins", "want a list of {name, path, args, env, optional}, got %s", describe(raw))
		return nil
	}
	var out []PluginConfig
	seen := map[string]int{}
	for i, item := range list {
		key := fmt.Sprintf("plugins[%d]", i)
		p, ok := parsePlugin(el, key, item)
		if !ok {
			continue
		}
		if j, dup := seen[p.Name]; dup {
			el.add(key+".name", "%q is already the name of plugins[%d]; names must be unique", p.Name, j)
			continue
		}
		seen[p.Name] = i
		out = append(out, p)
	}
	return out
}

func parsePlugin(el *errorList, key string, raw any) (PluginConfig, bool) {
	var p PluginConfig
	m, ok := raw.(map[string]any)
	if !ok {
		el.add(key, "want a mapping {name, path, args, env, optional}, got %s", describe(raw))
		return p, false
	}
	n := len(el.errs)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		val := m[name]
		switch name {
		case "name", "path":
			s, ok := val.(string)
			if !ok || strings.TrimSpace(s) == "" {
				el.add(key+"."+name, "want a non-empty string, got %s", describe(val))
				continue
			}
			if name == "name" {
				p.Name = s
			} else {
				p.Path = s
			}
		case "args":
			args, ok := parseArgs(el, key+".args", val)
			if !ok {
				continue
			}
			p.Args = args
		case "env":
			p.Env = parseEnv(el, key+".env", val)
		case "optional":
			b, ok := val.(bool)
			if !ok {
				el.add(key+".optional", "want true or false, got %s", describe(val))
				continue
			}
			p.Optional = b
		default:
			el.unknown(key, name, []string{"name", "path", "args", "env", "optional"})
		}
	}
	if _, ok := m["name"]; !ok {
		el.add(key+".name", "missing; every plugin needs a name")
	}
	// An entry without a path only marks the plugin of that name found in
	// .weave/plugins/ or the user's plugin directory as optional.
	if _, ok := m["path"]; !ok && !p.Optional {
		el.add(key+".path", "missing; give the plugin's path, or set optional: true to mark a plugin found in .weave/plugins/ optional")
	}
	return p, len(el.errs) == n
}

func parseEnv(el *errorList, key string, raw any) map[string]string {
	m, ok := raw.(map[string]any)
	if !ok {
		el.add(key, "want a mapping of variable names to values, got %s", describe(raw))
		return nil
	}
	out := make(map[string]string, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !envNameRE.MatchString(name) {
			el.add(key, "%q is not a valid environment variable name", name)
			continue
		}
		switch v := m[name].(type) {
		case string:
			out[name] = v
		case bool, int, int64, uint64, float64, fmt.Stringer:
			out[name] = fmt.Sprint(v)
		default:
			el.add(key+"."+name, "want a string value, got %s", describe(v))
		}
	}
	return out
}

// sections accumulates the map and list sections across layers.
type sections struct {
	agents     map[string]map[string]any
	categories map[string]map[string]any
	custom     map[string]map[string]any
	hooks      map[string][]HookMatcher
	plugins    []PluginConfig
	mcp        map[string]MCPServerConfig
	perms      PermissionsConfig
	models     map[string]map[string]any
	prices     map[string]map[string]any
}

func newSections() *sections {
	return &sections{agents: map[string]map[string]any{}, categories: map[string]map[string]any{},
		custom: map[string]map[string]any{}, hooks: map[string][]HookMatcher{}, mcp: map[string]MCPServerConfig{},
		models: map[string]map[string]any{}, prices: map[string]map[string]any{}}
}

// merge lays part over what lower layers set: agent and category fields
// override one by one, hook entries add up (as Claude Code runs the hooks
// of every settings file), a plugin replaces the one of the same name.
func (s *sections) merge(part *layerPart, l Layer, origin string, src *Sources) {
	mergeFields := func(section string, dst, from map[string]map[string]any) {
		for _, name := range slices.Sorted(maps.Keys(from)) {
			if dst[name] == nil {
				dst[name] = map[string]any{}
				src.set(section+"."+name, l, origin)
			}
			for f, v := range from[name] {
				dst[name][f] = v
				src.set(section+"."+name+"."+f, l, origin)
			}
		}
	}
	mergeFields("agents", s.agents, part.agents)
	mergeFields("categories", s.categories, part.categories)
	mergeFields("custom_agents", s.custom, part.custom)
	mergeFields("prices", s.prices, part.prices)
	for _, event := range slices.Sorted(maps.Keys(part.hooks)) {
		for _, hm := range part.hooks[event] {
			src.set(fmt.Sprintf("hooks.%s[%d]", event, len(s.hooks[event])), l, origin)
			s.hooks[event] = append(s.hooks[event], hm)
		}
	}
	mergePermissions(&s.perms, part.perms, l, origin, src)
	for _, p := range part.plugins {
		i := slices.IndexFunc(s.plugins, func(q PluginConfig) bool { return q.Name == p.Name })
		if i < 0 {
			i = len(s.plugins)
			s.plugins = append(s.plugins, p)
		} else {
			s.plugins[i] = p
		}
		src.set(fmt.Sprintf("plugins[%d]", i), l, origin)
	}
	// A later layer's server replaces an earlier one of the same name.
	for _, name := range slices.Sorted(maps.Keys(part.mcp)) {
		s.mcp[name] = part.mcp[name]
		src.set("mcp_servers."+name, l, origin)
	}
	mergeModels(s.models, part.models, l, origin, src)
}

func (s *sections) apply(c *Config) {
	c.Agents = make(map[string]AgentConfig, len(s.agents))
	for name, f := range s.agents {
		var a AgentConfig
		if v, ok := f["tools"].([]string); ok {
			a.Tools = v
		}
		a.AllowWiden, _ = f["allow_widen"].(bool)
		a.Model, _ = f["model"].(string)
		a.Fallback, _ = f["fallback"].([]string)
		a.Temperature = floatPtr(f["temperature"])
		a.PromptAppend, _ = f["prompt_append"].(string)
		if v, ok := f["mcp"].([]string); ok {
			a.MCP = append([]string{}, v...)
		}
		c.Agents[name] = a
	}
	c.Categories = make(map[string]CategoryConfig, len(s.categories))
	for name, f := range s.categories {
		var cc CategoryConfig
		cc.Model, _ = f["model"].(string)
		cc.Fallback, _ = f["fallback"].([]string)
		cc.Temperature = floatPtr(f["temperature"])
		cc.Tools, _ = f["tools"].([]string)
		cc.PromptAppend, _ = f["prompt_append"].(string)
		cc.Skills, _ = f["skills"].([]string)
		c.Categories[name] = cc
	}
	c.CustomAgents = make(map[string]CustomAgentConfig, len(s.custom))
	for name, f := range s.custom {
		var a CustomAgentConfig
		a.Description, _ = f["description"].(string)
		a.Prompt, _ = f["prompt"].(string)
		a.PromptFile, _ = f["prompt_file"].(string)
		a.Mode, _ = f["mode"].(string)
		if a.Mode == "" {
			a.Mode = "subagent"
		}
		a.Tools, _ = f["tools"].([]string)
		a.Model, _ = f["model"].(string)
		a.Fallback, _ = f["fallback"].([]string)
		a.Temperature = floatPtr(f["temperature"])
		a.Delegates, _ = f["delegates"].([]string)
		if v, ok := f["mcp"].([]string); ok {
			a.MCP = append([]string{}, v...)
		}
		c.CustomAgents[name] = a
	}
	c.Hooks = s.hooks
	c.MCPServers = maps.Clone(s.mcp)
	if c.MCPServers == nil {
		c.MCPServers = map[string]MCPServerConfig{}
	}
	c.Permissions = s.perms
	c.Models = applyModels(s.models)
	applyPrices(c, s.prices)
	c.Plugins = s.plugins
	if c.Plugins == nil {
		c.Plugins = []PluginConfig{}
	}
}

func floatPtr(v any) *float64 {
	f, ok := v.(float64)
	if !ok {
		return nil
	}
	return &f
}

// parseArgs reads a command's args: a list of strings, never one string
// (which would be split by nobody).
func parseArgs(el *errorList, key string, val any) ([]string, bool) {
	args, problem := toStrings(val)
	if _, isString := val.(string); isString {
		problem = "want a list of strings, got a string; write args: [a, b]"
	}
	if problem != "" {
		el.add(key, "%s", problem)
		return nil, false
	}
	return args, true
}
