package config

import (
	"errors"

	yaml "go.yaml.in/yaml/v3"

	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// MCPServerConfig is one MCP server Weave connects to (mcp_servers.<name>),
// in the shape of an entry of Claude Code's .mcp.json. Values may name
// environment variables (${VAR}, ${VAR:-default}); they are expanded when
// the server starts and never written back.
type MCPServerConfig struct {
	// Type is stdio (the default with a command), http (Streamable HTTP)
	// or sse (the older HTTP+SSE transport).
	Type    string
	Command string
	Args    []string
	// Env is added to a stdio server's environment, names keeping their
	// case.
	Env map[string]string
	// URL is an http or sse server's endpoint.
	URL string
	// Headers are sent with every request to an http or sse server.
	Headers map[string]string
}

// MCP server transports.
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
	MCPSSE   = "sse"
)

// MCPAll in agents.<name>.mcp lets the role use every configured server.
const MCPAll = "*"

var mcpServerFields = []string{"type", "command", "args", "env", "url", "headers"}

// ParseMCPServer validates one server entry as written in config or in a
// .mcp.json file (key names the entry in messages).
func ParseMCPServer(key string, raw any) (MCPServerConfig, error) {
	el := &errorList{}
	s, _ := parseMCPServer(el, key, raw)
	return s, errors.Join(el.errs...)
}

// parseMCPServers validates the mcp_servers map.
func parseMCPServers(el *errorList, raw any) map[string]MCPServerConfig {
	m, ok := raw.(map[string]any)
	if !ok {
		el.add("mcp_servers", "want a mapping of server names to {command, args, env} or {type, url, headers}, got %s", describe(raw))
		return nil
	}
	out := map[string]MCPServerConfig{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		key := "mcp_servers." + name
		if !mcpNameOK(name) {
			el.add(key, "a server name is letters, digits, '-' and '_' (it becomes part of tool names mcp__<server>__<tool>)")
			continue
		}
		if s, ok := parseMCPServer(el, key, m[name]); ok {
			out[name] = s
		}
	}
	return out
}

// mcpNameOK: the name must survive in a tool name a provider accepts, and
// not contain the "__" that separates server from tool.
func mcpNameOK(name string) bool {
	if name == "" || strings.Contains(name, "__") {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func parseMCPServer(el *errorList, key string, raw any) (MCPServerConfig, bool) {
	var s MCPServerConfig
	m, ok := raw.(map[string]any)
	if !ok {
		el.add(key, "want a mapping {command, args, env} or {type, url, headers}, got %s", describe(raw))
		return s, false
	}
	n := len(el.errs)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		val := m[name]
		switch name {
		case "type", "command", "url":
			str, ok := val.(string)
			if !ok || strings.TrimSpace(str) == "" {
				el.add(key+"."+name, "want a non-empty string, got %s", describe(val))
				continue
			}
			switch name {
			case "type":
				if str == "streamable-http" || str == "streamableHttp" {
					str = MCPHTTP
				}
				if !slices.Contains([]string{MCPStdio, MCPHTTP, MCPSSE}, str) {
					el.add(key+".type", "%s", oneOf(str, []string{MCPStdio, MCPHTTP, MCPSSE}))
					continue
				}
				s.Type = str
			case "command":
				s.Command = str
			case "url":
				s.URL = str
			}
		case "args":
			args, ok := parseArgs(el, key+".args", val)
			if !ok {
				continue
			}
			s.Args = args
		case "env":
			s.Env = parseEnv(el, key+".env", val)
		case "headers":
			s.Headers = parseHeaders(el, key+".headers", val)
		default:
			el.unknown(key, name, mcpServerFields)
		}
	}
	if s.Type == "" {
		s.Type = MCPStdio
		if s.Command == "" && s.URL != "" {
			s.Type = MCPHTTP
		}
	}
	switch s.Type {
	case MCPStdio:
		if s.Command == "" {
			el.add(key+".command", "missing; a stdio server needs the command that starts it (or give type: http and a url)")
		}
		if s.URL != "" || len(s.Headers) > 0 {
			el.add(key, "url and headers are for type http or sse, not a stdio server")
		}
	default:
		if s.URL == "" {
			el.add(key+".url", "missing; an %s server needs its url", s.Type)
		} else if u, err := url.Parse(s.URL); err == nil && !strings.Contains(s.URL, "${") && u.Scheme != "http" && u.Scheme != "https" {
			el.add(key+".url", "%q is not an http or https URL", s.URL)
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			el.add(key, "command, args and env are for a stdio server, not type %s", s.Type)
		}
	}
	return s, len(el.errs) == n
}

func parseHeaders(el *errorList, key string, raw any) map[string]string {
	m, ok := raw.(map[string]any)
	if !ok {
		el.add(key, "want a mapping of header names to values, got %s", describe(raw))
		return nil
	}
	out := make(map[string]string, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		v, ok := m[name].(string)
		if !ok {
			el.add(key+"."+name, "want a string value, got %s", describe(m[name]))
			continue
		}
		out[name] = v
	}
	return out
}

// mcpDoc is the key table's documentation of mcp_servers.
var mcpDoc = fmt.Sprintf("MCP servers whose tools the agents may use, as mcp__<server>__<tool>, by name: a stdio server {command, args, env} started in its own process group and stopped with the run, or {type: http|sse, url, headers}. Values may name environment variables as ${VAR} or ${VAR:-default}; they are read when the server starts and never written. A project .mcp.json (Claude Code's format) adds its servers; an entry here wins over one of the same name there. Which roles may use which servers: agents.<name>.mcp (default %q for roles whose row has write or edit, none for read-only roles).", MCPAll)

// mcpServers renders mcp_servers as written: references to environment
// variables stay references.
func (r renderer) mcpServers(servers map[string]MCPServerConfig) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s, key := servers[name], "mcp_servers."+name
		e := &yaml.Node{Kind: yaml.MappingNode}
		r.field(e, key, "type", s.Type)
		if s.Command != "" {
			r.field(e, key, "command", s.Command)
		}
		if len(s.Args) > 0 {
			r.field(e, key, "args", s.Args)
		}
		if s.URL != "" {
			r.field(e, key, "url", s.URL)
		}
		for _, sub := range []struct {
			name string
			m    map[string]string
		}{{"env", s.Env}, {"headers", s.Headers}} {
			if len(sub.m) == 0 {
				continue
			}
			n := &yaml.Node{Kind: yaml.MappingNode}
			for _, k := range slices.Sorted(maps.Keys(sub.m)) {
				v := sub.m[k]
				// A literal secret written in config is not shown again;
				// a reference to a variable is.
				if !strings.Contains(v, "${") && (sub.name == "headers" || secretName(k)) {
					v = redacted
				}
				r.field(n, key+"."+sub.name, k, v)
			}
			e.Content = append(e.Content, keyNode(sub.name), n)
		}
		m.Content = append(m.Content, keyNode(name), e)
	}
	return r.emptyOr(m, "mcp_servers")
}

func secretName(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASS", "AUTH", "CRED"} {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}
