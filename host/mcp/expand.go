package mcp

import (
	"fmt"
	"strings"
)

// expand replaces ${VAR} and ${VAR:-default} in s from lookup, as Claude
// Code expands .mcp.json. A variable that is unset and has no default is
// an error naming it; so is one refused (weave's own credentials).
func expand(s string, lookup func(string) (string, bool), refused func(string) bool) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(ref, ":-")
		if refused(name) {
			return "", fmt.Errorf("${%s} is one of weave's own credentials, which no MCP server gets", name)
		}
		v, ok := lookup(name)
		switch {
		case ok && v != "":
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		case ok:
		default:
			return "", fmt.Errorf("environment variable %s is not set (referenced as ${%s}); set it, or give a default as ${%s:-value}", name, ref, name)
		}
		s = s[i+j+1:]
	}
}
