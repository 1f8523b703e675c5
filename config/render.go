package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/weavehq/weave/internal/proc"
)

const redacted = "<redacted>"

// Render writes c as YAML, every key in table order. With withSources each
// value carries a comment naming where it came from: "# default",
// "# project: /p/.weave/config.yaml", "# env: WEAVE_LOG_LEVEL",
// "# flag: log.level". Secrets (bus.token) are shown as <redacted>.
func Render(w io.Writer, c *Config, s *Sources, withSources bool) error {
	r := renderer{src: s, withSources: withSources}
	root, err := r.tree(c)
	if err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return fmt.Errorf("render config: %w", err)
	}
	return enc.Close()
}

// RenderJSON writes c as one JSON object shaped like the YAML file, with
// durations in milliseconds under the key's name plus "_ms"
// (runbook.block_timeout is "runbook": {"block_timeout_ms": 1800000}), the
// unit of every duration weave prints as JSON. With withSources the object
// has a "sources" member mapping each dotted key (as written in the file)
// to where its value came from. Secrets are shown as <redacted>.
func RenderJSON(w io.Writer, c *Config, s *Sources, withSources bool) error {
	r := renderer{src: s, millis: true}
	root, err := r.tree(c)
	if err != nil {
		return err
	}
	var out map[string]any
	if err := root.Decode(&out); err != nil {
		return fmt.Errorf("render config: %w", err)
	}
	if withSources {
		sources := map[string]string{}
		for _, k := range keyTable() {
			sources[k.Name] = describeSource(s.Of(k.Name))
		}
		out["sources"] = sources
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// tree builds the document every renderer writes.
func (r renderer) tree(c *Config) (*yaml.Node, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range keyTable() {
		var val *yaml.Node
		parts := strings.Split(k.Name, ".")
		name := parts[len(parts)-1]
		switch k.Name {
		case "agents":
			val = r.agents(c.Agents)
		case "categories":
			val = r.categories(c.Categories)
		case "custom_agents":
			val = r.custom(c.CustomAgents)
		case "hooks":
			val = r.hooks(c.Hooks)
		case "plugins":
			val = r.plugins(c.Plugins)
		case "mcp_servers":
			val = r.mcpServers(c.MCPServers)
		case "models":
			val = r.models(c.Models)
		case "permissions":
			val = r.permissions(c.Permissions)
		case "prices":
			val = r.prices(c.Prices)
		default:
			v, err := fieldByKey(c, k.Name)
			if err != nil {
				return nil, err
			}
			if d, ok := v.Interface().(time.Duration); ok && r.millis {
				val = scalarNode(int(d.Milliseconds()))
				name += "_ms"
			} else {
				val = scalarNode(v.Interface())
			}
			if k.Secret && val.Value != "" {
				val.Value = redacted
			}
			if k.CredentialURL {
				val.Value = proc.RedactURL(val.Value)
			}
			r.annotate(val, k.Name)
		}
		parent := root
		for _, p := range parts[:len(parts)-1] {
			parent = mappingChild(parent, p)
		}
		parent.Content = append(parent.Content, keyNode(name), val)
	}
	return root, nil
}

type renderer struct {
	src         *Sources
	withSources bool
	// millis renders durations as whole milliseconds, for JSON.
	millis bool
}

func (r renderer) annotate(n *yaml.Node, key string) {
	if r.withSources {
		n.LineComment = describeSource(r.src.Of(key))
	}
}

// emptyOr annotates an empty section as a whole.
func (r renderer) emptyOr(n *yaml.Node, key string) *yaml.Node {
	if len(n.Content) == 0 {
		n.Style = yaml.FlowStyle
		r.annotate(n, key)
	}
	return n
}

func (r renderer) agents(agents map[string]AgentConfig) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range agentNames {
		a, ok := agents[name]
		if !ok {
			continue
		}
		key := "agents." + name
		e := &yaml.Node{Kind: yaml.MappingNode}
		if len(a.Tools) > 0 {
			r.field(e, key, "tools", a.Tools)
		}
		if a.AllowWiden {
			r.field(e, key, "allow_widen", true)
		}
		if a.MCP != nil {
			r.field(e, key, "mcp", a.MCP)
		}
		r.common(e, key, a.Model, a.Temperature, a.PromptAppend)
		r.fallback(e, key, a.Fallback)
		m.Content = append(m.Content, keyNode(name), r.emptyOr(e, key))
	}
	return r.emptyOr(m, "agents")
}

func (r renderer) categories(cats map[string]CategoryConfig) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range slices.Sorted(maps.Keys(cats)) {
		c, key := cats[name], "categories."+name
		e := &yaml.Node{Kind: yaml.MappingNode}
		if len(c.Tools) > 0 {
			r.field(e, key, "tools", c.Tools)
		}
		r.common(e, key, c.Model, c.Temperature, c.PromptAppend)
		r.fallback(e, key, c.Fallback)
		m.Content = append(m.Content, keyNode(name), r.emptyOr(e, key))
	}
	return r.emptyOr(m, "categories")
}

func (r renderer) custom(custom map[string]CustomAgentConfig) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range slices.Sorted(maps.Keys(custom)) {
		a, key := custom[name], "custom_agents."+name
		e := &yaml.Node{Kind: yaml.MappingNode}
		if a.Description != "" {
			r.field(e, key, "description", a.Description)
		}
		if a.PromptFile != "" {
			r.field(e, key, "prompt_file", a.PromptFile)
		} else {
			r.field(e, key, "prompt", a.Prompt)
		}
		r.field(e, key, "mode", a.Mode)
		if len(a.Tools) > 0 {
			r.field(e, key, "tools", a.Tools)
		}
		if len(a.Delegates) > 0 {
			r.field(e, key, "delegates", a.Delegates)
		}
		if a.MCP != nil {
			r.field(e, key, "mcp", a.MCP)
		}
		r.common(e, key, a.Model, a.Temperature, "")
		r.fallback(e, key, a.Fallback)
		m.Content = append(m.Content, keyNode(name), r.emptyOr(e, key))
	}
	return r.emptyOr(m, "custom_agents")
}

func (r renderer) common(e *yaml.Node, key, model string, temp *float64, prompt string) {
	if model != "" {
		r.field(e, key, "model", model)
	}
	if temp != nil {
		r.field(e, key, "temperature", *temp)
	}
	if prompt != "" {
		r.field(e, key, "prompt_append", prompt)
	}
}

func (r renderer) field(e *yaml.Node, prefix, name string, v any) {
	n := scalarNode(v)
	r.annotate(n, prefix+"."+name)
	e.Content = append(e.Content, keyNode(name), n)
}

func (r renderer) hooks(hooks map[string][]HookMatcher) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, event := range hookEvents {
		list := hooks[event]
		if len(list) == 0 {
			continue
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for i, hm := range list {
			key := fmt.Sprintf("hooks.%s[%d]", event, i)
			e := &yaml.Node{Kind: yaml.MappingNode}
			if hm.Matcher != "" {
				r.field(e, key, "matcher", hm.Matcher)
			}
			hs := &yaml.Node{Kind: yaml.SequenceNode}
			for j, h := range hm.Hooks {
				hk := fmt.Sprintf("%s.hooks[%d]", key, j)
				he := &yaml.Node{Kind: yaml.MappingNode}
				r.field(he, hk, "type", h.Type)
				if h.Command != "" {
					r.field(he, hk, "command", h.Command)
				}
				if h.URL != "" {
					r.field(he, hk, "url", h.URL)
				}
				if len(h.Headers) > 0 {
					// Header values may carry $VAR references, never
					// expanded here.
					hn := &yaml.Node{Kind: yaml.MappingNode}
					for _, k := range slices.Sorted(maps.Keys(h.Headers)) {
						r.field(hn, hk+".headers", k, h.Headers[k])
					}
					he.Content = append(he.Content, keyNode("headers"), hn)
				}
				r.field(he, hk, "timeout", h.Timeout)
				if h.If != "" {
					r.field(he, hk, "if", h.If)
				}
				if h.Async {
					r.field(he, hk, "async", true)
				}
				if h.Once {
					r.field(he, hk, "once", true)
				}
				if len(h.AllowedEnvVars) > 0 {
					r.field(he, hk, "allowedEnvVars", h.AllowedEnvVars)
				}
				if h.StatusMessage != "" {
					r.field(he, hk, "statusMessage", h.StatusMessage)
				}
				hs.Content = append(hs.Content, he)
			}
			e.Content = append(e.Content, keyNode("hooks"), hs)
			seq.Content = append(seq.Content, e)
		}
		m.Content = append(m.Content, keyNode(event), seq)
	}
	return r.emptyOr(m, "hooks")
}

func (r renderer) plugins(plugins []PluginConfig) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for i, p := range plugins {
		key := fmt.Sprintf("plugins[%d]", i)
		e := &yaml.Node{Kind: yaml.MappingNode}
		r.field(e, key, "name", p.Name)
		if p.Path != "" {
			r.field(e, key, "path", p.Path)
		}
		if p.Optional {
			r.field(e, key, "optional", true)
		}
		if len(p.Args) > 0 {
			r.field(e, key, "args", p.Args)
		}
		if len(p.Env) > 0 {
			env := &yaml.Node{Kind: yaml.MappingNode}
			for _, k := range slices.Sorted(maps.Keys(p.Env)) {
				r.field(env, key+".env", k, p.Env[k])
			}
			e.Content = append(e.Content, keyNode("env"), env)
		}
		seq.Content = append(seq.Content, e)
	}
	return r.emptyOr(seq, "plugins")
}

func keyNode(name string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}
}

// mappingChild returns the mapping under name in m, adding it if missing.
func mappingChild(m *yaml.Node, name string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return m.Content[i+1]
		}
	}
	child := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, keyNode(name), child)
	return child
}

// scalarNode renders one value the way a user would write it; durations as
// Go duration strings, lists in flow style.
func scalarNode(v any) *yaml.Node {
	switch t := v.(type) {
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(t)}
	case float64:
		// A whole number is written 5.0, which reads back as a float
		// without a !!float tag in sight.
		s := strconv.FormatFloat(t, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEnN") {
			s += ".0"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: s}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}
	case time.Duration:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: formatDuration(t)}
	case []string:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range t {
			n.Content = append(n.Content, scalarNode(s))
		}
		return n
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprint(v)}
}

// formatDuration drops the zero units Duration.String adds: 30m, not 30m0s.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// fieldByKey finds the Config field of a scalar key by its mapstructure tags.
func fieldByKey(c *Config, key string) (reflect.Value, error) {
	v := reflect.ValueOf(c).Elem()
	for _, part := range strings.Split(key, ".") {
		t := v.Type()
		found := false
		for i := range t.NumField() {
			if t.Field(i).Tag.Get("mapstructure") == part {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, fmt.Errorf("config key %s has no field in Config", key)
		}
	}
	return v, nil
}

// DefaultYAML returns the config file `weave init` writes to
// .weave/config.yaml: every key with its doc line and its default, all as
// comments, so that the file sets nothing until a line is uncommented and
// user-level settings keep applying. It loads to exactly the defaults.
func DefaultYAML() []byte {
	var b bytes.Buffer
	b.WriteString(`# Weave configuration for this project.
#
# Every key is listed, commented out, with its default: this file sets
# nothing until you uncomment a line (and its section's line, such as
# "runbook:"). Layers, each overriding the one before: built-in defaults,
# the user file ($XDG_CONFIG_HOME/weave/config.yaml, else
# ~/.config/weave/config.yaml), this file, WEAVE_* environment variables
# (log.level -> WEAVE_LOG_LEVEL), command-line flags.
# Durations are Go durations: 30s, 5m, 1h30m. See the effective result with
# "weave config show --sources".
#
# This file acts only as you last trusted it: after you (or a git pull, or
# an agent) change it, start-work and chat stop until you run "weave trust",
# which shows what changed (docs/trust.md).
`)
	var open []string // the sections currently open
	for _, k := range keyTable() {
		parts := strings.Split(k.Name, ".")
		sections := parts[:len(parts)-1]
		common := 0
		for common < len(open) && common < len(sections) && open[common] == sections[common] {
			common++
		}
		if common == 0 {
			b.WriteString("\n")
		}
		for i := common; i < len(sections); i++ {
			fmt.Fprintf(&b, "# %s%s:\n", indent(i), sections[i])
		}
		open = sections
		in := indent(len(sections))

		doc := k.Doc
		if len(k.Allowed) > 0 {
			if k.Kind == KindMap {
				doc += " Names: " + strings.Join(k.Allowed, ", ") + "."
			} else {
				doc += " One of: " + strings.Join(k.Allowed, ", ") + "."
			}
		}
		for _, line := range wrap(doc, 74-len(in)) {
			fmt.Fprintf(&b, "# %s# %s\n", in, line)
		}
		name := parts[len(parts)-1]
		switch k.Kind {
		case KindMap, KindList:
			fmt.Fprintf(&b, "# %s# For example:\n", in)
			for _, line := range strings.Split(k.Example, "\n") {
				fmt.Fprintf(&b, "# %s#   %s\n", in, line)
			}
			empty := "{}"
			if k.Kind == KindList {
				empty = "[]"
			}
			fmt.Fprintf(&b, "# %s%s: %s\n", in, name, empty)
		default:
			out, err := yaml.Marshal(scalarNode(k.Default))
			if err != nil {
				panic(fmt.Sprintf("config: render default of %s: %v", k.Name, err))
			}
			fmt.Fprintf(&b, "# %s%s: %s\n", in, name, strings.TrimSpace(string(out)))
		}
	}
	return b.Bytes()
}

func indent(level int) string { return strings.Repeat("  ", level) }

// wrap breaks text into lines of at most width runes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}
