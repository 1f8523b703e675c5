package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weavehq/weave/config"
)

// Sources of a server.
const (
	SourceConfig  = "config"
	SourceMCPJSON = ".mcp.json"
)

// Spec is one server to connect to.
type Spec struct {
	Name string
	// Source is where it was configured: SourceConfig or SourceMCPJSON.
	Source string
	config.MCPServerConfig
}

// Specs returns the servers of cfg and of project's .mcp.json, sorted by
// name; an entry of config wins over one of the same name in .mcp.json. A
// .mcp.json that cannot be read or is not valid is an error naming it.
func Specs(project string, cfg *config.Config) ([]Spec, error) {
	byName := map[string]Spec{}
	if project != "" {
		fromFile, err := readMCPJSON(filepath.Join(project, ".mcp.json"))
		if err != nil {
			return nil, err
		}
		for _, s := range fromFile {
			byName[s.Name] = s
		}
	}
	if cfg != nil {
		for name, s := range cfg.MCPServers {
			byName[name] = Spec{Name: name, Source: SourceConfig, MCPServerConfig: s}
		}
	}
	out := make([]Spec, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out, nil
}

// readMCPJSON reads Claude Code's project MCP file:
// {"mcpServers": {"name": {...}}}. A missing file has no servers.
func readMCPJSON(path string) ([]Spec, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var doc struct {
		MCPServers map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %w", path, err)
	}
	var out []Spec
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(doc.MCPServers)) {
		if !nameOK(name) {
			errs = append(errs, fmt.Errorf("%s: mcpServers.%s: a server name is letters, digits, '-' and '_' without \"__\" (it becomes part of tool names mcp__<server>__<tool>)", path, name))
			continue
		}
		s, err := config.ParseMCPServer("mcpServers."+name, doc.MCPServers[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		out = append(out, Spec{Name: name, Source: SourceMCPJSON, MCPServerConfig: s})
	}
	return out, errors.Join(errs...)
}

func nameOK(name string) bool {
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
