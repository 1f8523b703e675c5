package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/viper"
	yaml "go.yaml.in/yaml/v3"
)

// The models section: named model entries, each with the fields of the
// model section (its keys in the table, model.*, but model.fallback), so
// that an entry is checked, defaulted and rendered exactly as the model
// section is.

// modelEntryRE is an entry's name: it is written in agents' model and
// fallback keys, so it is a plain word.
var modelEntryRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// modelEntryKeys are the keys of the model section an entry has, by their
// name in the entry ("name", "azure.endpoint").
func modelEntryKeys() map[string]Key {
	out := map[string]Key{}
	for _, k := range keyTable() {
		if f, ok := strings.CutPrefix(k.Name, "model."); ok && f != "fallback" {
			out[f] = k
		}
	}
	return out
}

// parseModels validates the models section: name -> fields, each field
// converted and checked as its model.* key is. A field is kept by its
// dotted name in the entry ("azure.deployment").
func parseModels(el *errorList, raw any) map[string]map[string]any {
	m, ok := raw.(map[string]any)
	if !ok {
		el.add("models", "want a mapping of entry names to {provider, name, ...}, got %s", describe(raw))
		return nil
	}
	keys := modelEntryKeys()
	known := slices.Sorted(maps.Keys(keys))
	out := map[string]map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		prefix := "models." + name
		if !modelEntryRE.MatchString(name) {
			el.add(prefix, "an entry's name is letters, digits, '.', '_' and '-', starting with a letter or digit")
			continue
		}
		fields, ok := m[name].(map[string]any)
		if !ok {
			el.add(prefix, "want a mapping {provider, name, ...}, got %s", describe(m[name]))
			continue
		}
		entry := map[string]any{}
		var walk func(in string, fields map[string]any)
		walk = func(in string, fields map[string]any) {
			for _, f := range slices.Sorted(maps.Keys(fields)) {
				full := join(in, f)
				val := fields[f]
				k, isKey := keys[full]
				if !isKey {
					if sub, isMap := val.(map[string]any); isMap && slices.ContainsFunc(known, func(s string) bool { return strings.HasPrefix(s, full+".") }) {
						walk(full, sub)
						continue
					}
					where := prefix
					if in != "" {
						where += "." + in
					}
					el.unknown(where, f, known)
					continue
				}
				if val == nil {
					continue
				}
				k.Name = prefix + "." + full
				if v, ok := convertKey(el, k, val); ok {
					entry[full] = v
				}
			}
		}
		walk("", fields)
		out[name] = entry
	}
	return out
}

// mergeModels lays a layer's entries over the lower layers': an entry
// replaces the one of the same name whole, since fields of one provider
// mean nothing to another.
func mergeModels(dst, from map[string]map[string]any, l Layer, origin string, src *Sources) {
	for _, name := range slices.Sorted(maps.Keys(from)) {
		dst[name] = from[name]
		src.set("models."+name, l, origin)
		for f := range from[name] {
			src.set("models."+name+"."+f, l, origin)
		}
	}
}

// applyModels turns the entries into ModelConfigs, a field not set taking
// its model.* key's default.
func applyModels(entries map[string]map[string]any) map[string]ModelConfig {
	out := make(map[string]ModelConfig, len(entries))
	keys := modelEntryKeys()
	for name, fields := range entries {
		v := viper.New()
		for f, k := range keys {
			v.SetDefault("model."+f, k.Default)
		}
		for f, val := range fields {
			v.Set("model."+f, val)
		}
		var c struct {
			Model ModelConfig `mapstructure:"model"`
		}
		if err := v.Unmarshal(&c); err != nil {
			// The values were converted to their Go types when read.
			panic(fmt.Sprintf("config: decode models.%s: %v", name, err))
		}
		c.Model.Fallback = nil
		out[name] = c.Model
	}
	return out
}

// anthropicMinThinking is the least budget_tokens Anthropic accepts.
const anthropicMinThinking = 1024

// checkModels validates what spans keys: each entry (and the model
// section) has what its provider needs and takes only what it knows, and
// every fallback names an entry.
func checkModels(c *Config, src *Sources) error {
	var errs []error
	blame := func(key, format string, args ...any) {
		l, o := src.Of(key)
		errs = append(errs, &FieldError{Layer: l, Origin: o, Key: key, Problem: fmt.Sprintf(format, args...)})
	}
	if c.Model.Provider != "none" && c.Model.Provider != "" {
		checkModelEntry(blame, "model", c.Model)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		prefix, m := "models."+name, c.Models[name]
		switch {
		case m.Provider == "" || m.Provider == "none":
			blame(prefix+".provider", "missing; want one of %s", strings.Join(providerValues()[1:], ", "))
			continue
		case m.Name == "" && (m.Provider != "azure" || m.Azure.Deployment == ""):
			blame(prefix+".name", "missing; want the model to use, e.g. %s", exampleModel(m.Provider))
			continue
		}
		checkModelEntry(blame, prefix, m)
	}
	have := slices.Sorted(maps.Keys(c.Models))
	checkList := func(key string, list []string) {
		for _, n := range list {
			if _, ok := c.Models[n]; !ok {
				if len(have) == 0 {
					blame(key, "%q is not an entry of models: a fallback names an entry (models: {%s: {provider, name}})", n, n)
				} else {
					blame(key, "%q is not an entry of models (have: %s)%s", n, strings.Join(have, ", "), didYouMean(n, have))
				}
			}
		}
	}
	checkList("model.fallback", c.Model.Fallback)
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		checkList("agents."+name+".fallback", c.Agents[name].Fallback)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Categories)) {
		checkList("categories."+name+".fallback", c.Categories[name].Fallback)
	}
	for _, name := range slices.Sorted(maps.Keys(c.CustomAgents)) {
		checkList("custom_agents."+name+".fallback", c.CustomAgents[name].Fallback)
	}
	return errors.Join(errs...)
}

// checkModelEntry checks one entry (or the model section, prefix "model")
// against its provider.
func checkModelEntry(blame func(key, format string, args ...any), prefix string, m ModelConfig) {
	var effort, thinking bool
	for _, p := range modelProviders {
		if p.name == m.Provider {
			effort, thinking = p.effort, p.thinking
		}
	}
	if m.ReasoningEffort != "" && !effort {
		blame(prefix+".reasoning_effort", "%s does not take a reasoning effort; set thinking_budget instead", m.Provider)
	}
	if m.ThinkingBudget > 0 {
		switch {
		case m.ReasoningEffort != "" && effort && thinking:
			blame(prefix+".thinking_budget", "set reasoning_effort or thinking_budget, not both: %s takes one at a time", m.Provider)
		case !thinking:
			blame(prefix+".thinking_budget", "%s does not take a thinking budget; set reasoning_effort instead", m.Provider)
		case m.Provider == "anthropic" && m.ThinkingBudget < anthropicMinThinking:
			blame(prefix+".thinking_budget", "%d is below Anthropic's least budget of %d tokens", m.ThinkingBudget, anthropicMinThinking)
		case m.MaxTokens > 0 && m.MaxTokens <= m.ThinkingBudget:
			blame(prefix+".max_tokens", "%d must be above thinking_budget (%d): the answer comes after the thinking, within max_tokens", m.MaxTokens, m.ThinkingBudget)
		}
	}
	if m.Provider == "azure" {
		if m.Azure.Endpoint == "" && m.BaseURL == "" {
			blame(prefix+".azure.endpoint", "missing; provider azure needs the resource's endpoint, e.g. https://<resource>.openai.azure.com")
		}
		if m.Azure.APIVersion == "" {
			blame(prefix+".azure.api_version", "must not be empty; Azure OpenAI wants an API version, e.g. 2024-10-21")
		}
	}
}

// models renders the entries, each with the fields it sets (a field at its
// default is left out).
func (r renderer) models(entries map[string]ModelConfig) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	keys := modelEntryKeys()
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		prefix := "models." + name
		e := &yaml.Node{Kind: yaml.MappingNode}
		v := reflect.ValueOf(entries[name])
		for _, k := range keyTable() {
			f, ok := strings.CutPrefix(k.Name, "model.")
			if _, isEntry := keys[f]; !ok || !isEntry {
				continue
			}
			fv, err := fieldOf(v, f)
			if err != nil || reflect.DeepEqual(fv.Interface(), k.Default) || fv.IsZero() {
				continue
			}
			val := fv.Interface()
			if d, ok := val.(time.Duration); ok && r.millis {
				val = int(d.Milliseconds())
				f += "_ms"
			}
			parts := strings.Split(f, ".")
			parent := e
			for _, p := range parts[:len(parts)-1] {
				parent = mappingChild(parent, p)
			}
			n := scalarNode(val)
			r.annotate(n, prefix+"."+strings.TrimSuffix(f, "_ms"))
			parent.Content = append(parent.Content, keyNode(parts[len(parts)-1]), n)
		}
		m.Content = append(m.Content, keyNode(name), r.emptyOr(e, prefix))
	}
	return r.emptyOr(m, "models")
}

// fieldOf walks v's fields by their mapstructure names.
func fieldOf(v reflect.Value, dotted string) (reflect.Value, error) {
	for _, part := range strings.Split(dotted, ".") {
		t, found := v.Type(), false
		for i := range t.NumField() {
			if t.Field(i).Tag.Get("mapstructure") == part {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, fmt.Errorf("no field %s", dotted)
		}
	}
	return v, nil
}

// fallback renders an agent's fallback list when it has one.
func (r renderer) fallback(e *yaml.Node, key string, list []string) {
	if len(list) > 0 {
		r.field(e, key, "fallback", list)
	}
}
