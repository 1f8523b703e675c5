package plugins

import "testing"

func TestMCPToolNames(t *testing.T) {
	if got := MCPToolName("github", "create issue.v2"); got != "mcp__github__create_issue_v2" {
		t.Errorf("MCPToolName = %q", got)
	}
	for name, want := range map[string]string{"mcp__github__create_issue": "github", "mcp__a__b__c": "a", "mcp__x": "", "read": "", "mcp____t": ""} {
		if got, _ := MCPServerOf(name); got != want {
			t.Errorf("MCPServerOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// An "mcp__<server>__*" entry of Info.Tools stands for that server's tools
// only, and never for a built-in tool.
func TestHandlesMCPPattern(t *testing.T) {
	i := Info{Events: []string{EventToolExecuteBefore}, Tools: map[string][]string{EventToolExecuteBefore: {ToolBash, "mcp__github__*"}}}
	for tool, want := range map[string]bool{"mcp__github__create_issue": true, "mcp__gitlab__x": false, "bash": true, "read": false, "mcp__github": false} {
		if got := i.Handles(EventToolExecuteBefore, tool); got != want {
			t.Errorf("Handles(%q) = %v, want %v", tool, got, want)
		}
	}
	if err := i.CheckTools(); err != nil {
		t.Errorf("CheckTools: %v", err)
	}
}
