package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/weavehq/weave/plugins"
)

// DeferTools is the number of MCP tools past which their definitions are
// deferred behind mcp_tool_search; so is a tenth of the context window.
const DeferTools = 40

// searchLimit is how many tools one search answers at most.
const searchLimit = 5

// searchSpec is the tool a model finds deferred MCP tools with.
var searchSpec = plugins.ToolSpec{
	Name: plugins.ToolMCPSearch,
	Description: "Find tools of the MCP servers, which are not all listed here: give words of what you need (or select:<name>,<name> for exact names). " +
		"Answers the matching tools' names, descriptions and input schemas; they can be called from your next turn.",
	Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"words to match against tool names and descriptions, or select:<name>,<name>"},"max_results":{"type":"integer","description":"at most this many tools (default 5, at most 20)"}},"required":["query"]}`),
}

// Specs returns the MCP tools agent in session is offered, of the servers
// allowed says it may use: all of them while they fit the budget, else
// mcp_tool_search and the ones a search loaded for it.
func (m *Manager) Specs(session, agent string, allowed func(server string) bool) []plugins.ToolSpec {
	all := m.allowedTools(allowed)
	if len(all) == 0 {
		return nil
	}
	if !m.deferred(all) {
		out := make([]plugins.ToolSpec, len(all))
		for i, t := range all {
			out[i] = t.Spec()
		}
		return out
	}
	m.mu.Lock()
	loaded := m.loaded[[2]string{session, agent}]
	m.mu.Unlock()
	out := []plugins.ToolSpec{searchSpec}
	for _, t := range all {
		if loaded[t.Name] {
			out = append(out, t.Spec())
		}
	}
	return out
}

func (m *Manager) allowedTools(allowed func(string) bool) []Tool {
	all := m.Tools()
	return slices.DeleteFunc(all, func(t Tool) bool { return allowed != nil && !allowed(t.Server) })
}

// deferred says whether tools are past the budget: more than DeferTools,
// or their definitions more than a tenth of the window (at about four
// bytes a token).
func (m *Manager) deferred(tools []Tool) bool {
	if len(tools) > DeferTools {
		return true
	}
	if m.opts.ContextWindow <= 0 {
		return false
	}
	size := 0
	for _, t := range tools {
		size += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return size/4 > m.opts.ContextWindow/10
}

// Search answers mcp_tool_search for agent in session: the tools of the
// servers it may use that match query, best first, which from then on are
// offered to it.
func (m *Manager) Search(session, agent string, args map[string]any, allowed func(server string) bool) plugins.ToolResult {
	query, _ := args["query"].(string)
	query = strings.TrimSpace(query)
	if query == "" {
		return failure("mcp_tool_search needs a query: words of what you need, or select:<name>,<name>")
	}
	limit := searchLimit
	if n, ok := args["max_results"].(float64); ok && n >= 1 {
		limit = min(int(n), 20)
	}
	all := m.allowedTools(allowed)
	var found []Tool
	if names, ok := strings.CutPrefix(query, "select:"); ok {
		for _, n := range strings.Split(names, ",") {
			if i := slices.IndexFunc(all, func(t Tool) bool { return t.Name == strings.TrimSpace(n) }); i >= 0 {
				found = append(found, all[i])
			}
		}
	} else {
		found = rank(all, strings.Fields(strings.ToLower(query)))
	}
	if len(found) > limit {
		found = found[:limit]
	}
	if len(found) == 0 {
		return plugins.ToolResult{Output: fmt.Sprintf("No MCP tool matches %q among %d tools; try other words.", query, len(all))}
	}
	m.mu.Lock()
	key := [2]string{session, agent}
	if m.loaded[key] == nil {
		m.loaded[key] = map[string]bool{}
	}
	for _, t := range found {
		m.loaded[key][t.Name] = true
	}
	m.mu.Unlock()
	type entry struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	list := make([]entry, len(found))
	for i, t := range found {
		list[i] = entry{t.Name, t.Description, t.Schema}
	}
	raw, _ := json.MarshalIndent(list, "", "  ")
	return plugins.ToolResult{Output: fmt.Sprintf("%d tools found; you can call them from now on:\n%s", len(found), raw)}
}

// rank orders the tools matching at least one word, by words matched (a
// match in the name counts double), then by name.
func rank(tools []Tool, words []string) []Tool {
	type scored struct {
		t Tool
		n int
	}
	var hits []scored
	for _, t := range tools {
		name, desc := strings.ToLower(t.Name), strings.ToLower(t.Description)
		n := 0
		for _, w := range words {
			if strings.Contains(name, w) {
				n += 2
			} else if strings.Contains(desc, w) {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, scored{t, n})
		}
	}
	slices.SortStableFunc(hits, func(a, b scored) int { return b.n - a.n })
	out := make([]Tool, len(hits))
	for i, h := range hits {
		out[i] = h.t
	}
	return out
}
