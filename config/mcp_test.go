package config

import (
	"bytes"
	"strings"
	"testing"
)

func TestMCPServers(t *testing.T) {
	e := newEnv(t)
	write(t, e.userFile("config.yaml"), "mcp_servers:\n  docs:\n    url: https://user.example/mcp\n  github:\n    command: user-gh\n")
	write(t, e.projectFile("config.yaml"), `mcp_servers:
  github:
    command: npx
    args: [-y, "@modelcontextprotocol/server-github"]
    env:
      GITHUB_PERSONAL_ACCESS_TOKEN: ${GITHUB_TOKEN}
  old:
    type: sse
    url: http://localhost:3001/sse
    headers:
      Authorization: Bearer literal-secret
agents:
  weft:
    mcp: [github]
  loom:
    mcp: []
`)
	c, src := mustLoad(t, e.opts())
	gh := c.MCPServers["github"]
	if gh.Type != MCPStdio || gh.Command != "npx" || len(gh.Args) != 2 || gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "${GITHUB_TOKEN}" {
		t.Errorf("github = %+v", gh)
	}
	if d := c.MCPServers["docs"]; d.Type != MCPHTTP || d.URL != "https://user.example/mcp" {
		t.Errorf("docs from the user file = %+v, want an http server", d)
	}
	if c.MCPServers["old"].Type != MCPSSE {
		t.Errorf("old = %+v", c.MCPServers["old"])
	}
	if got := c.Agents["weft"].MCP; len(got) != 1 || got[0] != "github" {
		t.Errorf("agents.weft.mcp = %v", got)
	}
	if got := c.Agents["loom"].MCP; got == nil || len(got) != 0 {
		t.Errorf("agents.loom.mcp = %#v, want empty, not unset", got)
	}
	if c.Agents["weft"].MCP == nil || c.Agents["tapestry"].MCP != nil {
		t.Error("an unset agents.<name>.mcp must stay nil (the default)")
	}
	var out bytes.Buffer
	if err := Render(&out, c, src, false); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "${GITHUB_TOKEN}") || strings.Contains(s, "literal-secret") {
		t.Errorf("config show:\n%s\nwant the reference shown and the literal header hidden", s)
	}
}

func TestMCPServerErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		"mcp_servers:\n  a:\n    args: [x]\n":                     "mcp_servers.a.command: missing",
		"mcp_servers:\n  a:\n    type: ws\n    url: http://x\n":   "mcp_servers.a.type",
		"mcp_servers:\n  a:\n    type: http\n":                    "mcp_servers.a.url: missing",
		"mcp_servers:\n  a:\n    command: x\n    cwd: /\n":        "mcp_servers.a.cwd: unknown key",
		"mcp_servers:\n  a__b:\n    command: x\n":                 "mcp_servers.a__b",
		"mcp_servers:\n  a:\n    command: x\n    url: http://y\n": "url and headers are for type http or sse",
		"mcp_servers:\n  a:\n    url: ftp://y\n":                  "not an http or https URL",
		"mcp_servers:\n  a:\n    command: x\n    args: a b\n":     "want a list of strings",
		"agents:\n  weft:\n    mcp: {a: b}\n":                     "agents.weft.mcp",
	} {
		e := newEnv(t)
		write(t, e.projectFile("config.yaml"), cfg)
		_, _, err := Load(e.opts())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", cfg, err, want)
		}
	}
}
