package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/weavehq/weave/internal/permrule"
	yaml "go.yaml.in/yaml/v3"
)

// PermissionsConfig is the permissions section, in Claude Code's keys so
// that a settings file's block pastes in unchanged. The lists of every
// layer add up (a deny in the user file holds in every project); a later
// layer's defaultMode wins.
type PermissionsConfig struct {
	// Allow, Ask and Deny hold rules in Claude Code's syntax
	// (Bash(git status:*), Read(.env), mcp__github, ...).
	Allow []string
	Ask   []string
	Deny  []string
	// DefaultMode is what a call no rule decides does; "" leaves it to the
	// roles' rows.
	DefaultMode string
	// AdditionalDirectories is accepted and not used: Weave's tools stay
	// in the project.
	AdditionalDirectories []string
	// DisableBypassPermissionsMode is accepted ("disable"); bypass never
	// widens a row in Weave, so there is nothing to disable.
	DisableBypassPermissionsMode string
}

// permissionKeys are the keys the section takes.
var permissionKeys = []string{"allow", "ask", "deny", "defaultMode", "additionalDirectories", "disableBypassPermissionsMode"}

// parsePermissions validates one file's permissions section: each rule
// must parse (a Claude Code tool Weave lacks is accepted and matches
// nothing).
func parsePermissions(el *errorList, raw any) *PermissionsConfig {
	m, ok := raw.(map[string]any)
	if !ok {
		el.add("permissions", "want a mapping with %s, got %s", strings.Join(permissionKeys, ", "), describe(raw))
		return nil
	}
	p := &PermissionsConfig{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		key := "permissions." + name
		val := m[name]
		if val == nil {
			continue
		}
		switch name {
		case "allow", "ask", "deny":
			list, prob := toStrings(val)
			if prob != "" {
				el.add(key, "%s", prob)
				continue
			}
			for i, s := range list {
				if _, err := permrule.Parse(s); err != nil {
					el.add(fmt.Sprintf("%s[%d]", key, i), "%v", err)
				}
			}
			switch name {
			case "allow":
				p.Allow = list
			case "ask":
				p.Ask = list
			default:
				p.Deny = list
			}
		case "additionalDirectories":
			list, prob := toStrings(val)
			if prob != "" {
				el.add(key, "%s", prob)
				continue
			}
			p.AdditionalDirectories = list
		case "defaultMode":
			s, ok := val.(string)
			if !ok || !slices.Contains(permrule.Modes(), s) {
				el.add(key, "want one of %s, got %s", strings.Join(permrule.Modes(), ", "), describe(val))
				continue
			}
			p.DefaultMode = s
		case "disableBypassPermissionsMode":
			s, ok := val.(string)
			if !ok || s != "disable" {
				el.add(key, "want disable, got %s", describe(val))
				continue
			}
			p.DisableBypassPermissionsMode = s
		default:
			el.unknown("permissions", name, permissionKeys)
		}
	}
	return p
}

// mergePermissions lays one file's section over the lower layers'.
func mergePermissions(dst *PermissionsConfig, from *PermissionsConfig, l Layer, origin string, src *Sources) {
	if from == nil {
		return
	}
	for _, f := range []struct {
		name     string
		dst, add *[]string
	}{{"allow", &dst.Allow, &from.Allow}, {"ask", &dst.Ask, &from.Ask}, {"deny", &dst.Deny, &from.Deny},
		{"additionalDirectories", &dst.AdditionalDirectories, &from.AdditionalDirectories}} {
		for _, s := range *f.add {
			src.set(fmt.Sprintf("permissions.%s[%d]", f.name, len(*f.dst)), l, origin)
			*f.dst = append(*f.dst, s)
		}
	}
	if from.DefaultMode != "" {
		dst.DefaultMode = from.DefaultMode
		src.set("permissions.defaultMode", l, origin)
	}
	if from.DisableBypassPermissionsMode != "" {
		dst.DisableBypassPermissionsMode = from.DisableBypassPermissionsMode
		src.set("permissions.disableBypassPermissionsMode", l, origin)
	}
}

func (r renderer) permissions(p PermissionsConfig) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range []struct {
		name string
		list []string
	}{{"allow", p.Allow}, {"ask", p.Ask}, {"deny", p.Deny}, {"additionalDirectories", p.AdditionalDirectories}} {
		if len(f.list) == 0 {
			continue
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for i, s := range f.list {
			n := scalarNode(s)
			r.annotate(n, fmt.Sprintf("permissions.%s[%d]", f.name, i))
			seq.Content = append(seq.Content, n)
		}
		m.Content = append(m.Content, keyNode(f.name), seq)
	}
	if p.DefaultMode != "" {
		r.field(m, "permissions", "defaultMode", p.DefaultMode)
	}
	if p.DisableBypassPermissionsMode != "" {
		r.field(m, "permissions", "disableBypassPermissionsMode", p.DisableBypassPermissionsMode)
	}
	return r.emptyOr(m, "permissions")
}
