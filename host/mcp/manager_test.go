package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/mcp/mcptest"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/plugins"
)

func TestMain(m *testing.M) {
	mcptest.ServeIfAsked()
	os.Exit(m.Run())
}

// stdioSpec is this test binary serving the test server over stdio.
func stdioSpec(t testing.TB, name string, env map[string]string) Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{mcptest.ServeEnv: "1"}
	for k, v := range env {
		e[k] = v
	}
	return Spec{Name: name, Source: SourceConfig, MCPServerConfig: config.MCPServerConfig{Type: config.MCPStdio, Command: exe, Env: e}}
}

func start(t testing.TB, o Options, specs ...Spec) *Manager {
	t.Helper()
	if o.Project == "" {
		o.Project = t.TempDir()
	}
	m := New(specs, o)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.Start(ctx)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func call(t *testing.T, m *Manager, tool string, args map[string]any) plugins.ToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := m.Call(ctx, tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func TestStdioServerToolsAndResults(t *testing.T) {
	environ := append(os.Environ(), "MCPTEST_SECRET_SOURCE=s3cret-value", "WEAVE_BUS_TOKEN=bus-token-value", "OPENAI_API_KEY=sk-model-key")
	m := start(t, Options{Environ: environ, Hide: []string{"OPENAI_API_KEY"}},
		stdioSpec(t, "t", map[string]string{"FROM_REF": "${MCPTEST_SECRET_SOURCE}", "WITH_DEFAULT": "${MCPTEST_UNSET:-fallback}"}))
	st := m.Status()
	if len(st) != 1 || st[0].State != StateReady {
		t.Fatalf("status %+v, want one ready server", st)
	}
	names := strings.Join(st[0].Tools, " ")
	for _, want := range []string{"mcp__t__echo", "mcp__t__image", "mcp__t__crash"} {
		if !strings.Contains(names, want) {
			t.Errorf("tools %s, want %s", names, want)
		}
	}
	var echo Tool
	for _, tl := range m.Tools() {
		if tl.Name == "mcp__t__echo" {
			echo = tl
		}
	}
	if !strings.Contains(string(echo.Schema), `"message"`) || echo.Description == "" {
		t.Errorf("echo offered as %+v, want its description and input schema", echo)
	}
	if r := call(t, m, "mcp__t__echo", map[string]any{"message": "hi"}); r.IsError || r.Output != "Echo: hi" {
		t.Errorf("echo = %+v", r)
	}
	if r := call(t, m, "mcp__t__image", nil); !strings.Contains(r.Output, "a picture:") || !strings.Contains(r.Output, "[image: image/png, 68 bytes") {
		t.Errorf("image = %q, want the text and a note with the type and size", r.Output)
	}
	if r := call(t, m, "mcp__t__structured", nil); !strings.Contains(r.Output, `"sum": 3`) {
		t.Errorf("structured = %q, want the structured content as JSON", r.Output)
	}
	for name, want := range map[string]string{
		"FROM_REF": `set=true value="s3cret-value"`, "WITH_DEFAULT": `value="fallback"`,
		"WEAVE_BUS_TOKEN": "set=false", "OPENAI_API_KEY": "set=false",
	} {
		if r := call(t, m, "mcp__t__env", map[string]any{"name": name}); !strings.Contains(r.Output, want) {
			t.Errorf("the server's %s: %q, want %s", name, r.Output, want)
		}
	}
	if r := call(t, m, "mcp__t__nosuch", nil); !r.IsError || !strings.Contains(r.Output, "MCP server t has no tool nosuch") {
		t.Errorf("unknown tool = %+v", r)
	}
	if r := call(t, m, "mcp__other__echo", nil); !r.IsError || !strings.Contains(r.Output, `no MCP server "other"`) {
		t.Errorf("unknown server = %+v", r)
	}
}

func TestCredentialReferenceRefused(t *testing.T) {
	environ := append(os.Environ(), "WEAVE_BUS_TOKEN=bus-token-value")
	m := start(t, Options{Environ: environ}, stdioSpec(t, "t", map[string]string{"X": "${WEAVE_BUS_TOKEN}"}))
	st := m.Status()[0]
	if st.State != StateFailed || !strings.Contains(st.Error, "WEAVE_BUS_TOKEN") || strings.Contains(st.Error, "bus-token-value") {
		t.Fatalf("status %+v, want failed naming the variable, never its value", st)
	}
	if len(m.Tools()) != 0 {
		t.Errorf("a failed server's tools are offered: %v", m.Tools())
	}
}

// TestServerDiesMidCall: the call in flight fails naming the server, the
// server is restarted, and the next call is answered.
func TestServerDiesMidCall(t *testing.T) {
	m := start(t, Options{}, stdioSpec(t, "t", nil))
	pid := m.servers[0].link.group.PID()
	r := call(t, m, "mcp__t__crash", nil)
	if !r.IsError || !strings.Contains(r.Output, "MCP server t stopped during the call") {
		t.Fatalf("crash = %+v, want a failure naming the server", r)
	}
	r = call(t, m, "mcp__t__echo", map[string]any{"message": "again"})
	if r.IsError || r.Output != "Echo: again" {
		t.Fatalf("echo after the restart = %+v", r)
	}
	st := m.Status()[0]
	if st.Restarts < 1 || st.State != StateReady {
		t.Errorf("status %+v, want ready after a restart", st)
	}
	if now := m.servers[0].link.group.PID(); now == pid {
		t.Errorf("the server has the pid it had before it died (%d)", pid)
	}
}

// TestCloseStopsServers: nothing a stdio server runs outlives the manager.
func TestCloseStopsServers(t *testing.T) {
	set := proc.NewSet(time.Second, nil)
	m := start(t, Options{Procs: set}, stdioSpec(t, "t", nil))
	pid := m.servers[0].link.group.PID()
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the server is not running: %v", err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the server's process group %d outlived Close", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDeferredPastBudget: 200 tools are offered as mcp_tool_search, which
// loads the matches for that agent in that session only.
func TestDeferredPastBudget(t *testing.T) {
	m := start(t, Options{ContextWindow: 200000}, stdioSpec(t, "t", map[string]string{mcptest.ToolsEnv: "200"}))
	if n := len(m.Tools()); n != 206 {
		t.Fatalf("%d tools, want 206", n)
	}
	specs := m.Specs("s1", "loom", nil)
	if len(specs) != 1 || specs[0].Name != plugins.ToolMCPSearch {
		t.Fatalf("offered %d specs, want mcp_tool_search alone", len(specs))
	}
	res := m.Search("s1", "loom", map[string]any{"query": "echo"}, nil)
	if res.IsError || !strings.Contains(res.Output, "mcp__t__echo") || !strings.Contains(res.Output, `"message"`) {
		t.Fatalf("search = %q, want echo with its schema", res.Output)
	}
	got := m.Specs("s1", "loom", nil)
	if len(got) != 2 || got[1].Name != "mcp__t__echo" {
		t.Errorf("after the search: %v, want mcp_tool_search and echo", specNames(got))
	}
	if other := m.Specs("s2", "loom", nil); len(other) != 1 {
		t.Errorf("another session got %v", specNames(other))
	}
	res = m.Search("s1", "loom", map[string]any{"query": "select:mcp__t__filler_007,mcp__t__filler_008"}, nil)
	if !strings.Contains(res.Output, "filler_007") || !strings.Contains(res.Output, "filler_008") {
		t.Errorf("select = %q", res.Output)
	}
	if only := m.Specs("s3", "loom", func(string) bool { return false }); only != nil {
		t.Errorf("an agent without servers is offered %v", specNames(only))
	}
	if few := start(t, Options{}, stdioSpec(t, "f", nil)).Specs("s", "loom", nil); len(few) != 6 {
		t.Errorf("six tools under the budget offered as %v, want all six", specNames(few))
	}
}

func specNames(s []plugins.ToolSpec) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Name)
	}
	return out
}

// TestHTTPAndSSE: a Streamable HTTP server and an SSE one, each getting
// the entry's headers with references expanded.
func TestHTTPAndSSE(t *testing.T) {
	var seen atomic.Value
	check := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Store(r.Header.Get("Authorization"))
			h.ServeHTTP(w, r)
		})
	}
	getServer := func(*http.Request) *sdk.Server { return mcptest.NewServer(0, nil) }
	// Closed after the manager (cleanups run last first).
	streamable := httptest.NewServer(check(sdk.NewStreamableHTTPHandler(getServer, nil)))
	t.Cleanup(streamable.Close)
	sse := httptest.NewServer(check(sdk.NewSSEHandler(getServer, nil)))
	t.Cleanup(sse.Close)
	environ := append(os.Environ(), "MCPTEST_TOKEN=tok-123")
	hdr := map[string]string{"Authorization": "Bearer ${MCPTEST_TOKEN}"}
	m := start(t, Options{Environ: environ},
		Spec{Name: "web", MCPServerConfig: config.MCPServerConfig{Type: config.MCPHTTP, URL: streamable.URL, Headers: hdr}},
		Spec{Name: "old", MCPServerConfig: config.MCPServerConfig{Type: config.MCPSSE, URL: sse.URL, Headers: hdr}})
	for _, st := range m.Status() {
		if st.State != StateReady {
			t.Fatalf("%s: %+v", st.Name, st)
		}
	}
	for _, tool := range []string{"mcp__web__echo", "mcp__old__echo"} {
		if r := call(t, m, tool, map[string]any{"message": "x"}); r.Output != "Echo: x" {
			t.Errorf("%s = %+v", tool, r)
		}
	}
	if got, _ := seen.Load().(string); got != "Bearer tok-123" {
		t.Errorf("Authorization %q, want the expanded header", got)
	}
}

func TestSpecsFromConfigAndMCPJSON(t *testing.T) {
	dir := t.TempDir()
	doc := `{"mcpServers": {
		"fs": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"K": "${HOME}"}},
		"web": {"type": "http", "url": "https://example.com/mcp", "headers": {"X": "${TOKEN:-none}"}},
		"both": {"command": "from-file"}
	}}`
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.MCPServers = map[string]config.MCPServerConfig{"both": {Type: config.MCPStdio, Command: "from-config"}}
	specs, err := Specs(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(specs)
	if len(specs) != 3 || specs[0].Name != "both" || specs[0].Command != "from-config" || specs[0].Source != SourceConfig ||
		specs[1].Name != "fs" || specs[1].Source != SourceMCPJSON || specs[2].Type != config.MCPHTTP {
		t.Errorf("specs %s", got)
	}
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"bad": {"type": "ws", "url": "x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Specs(dir, nil); err == nil || !strings.Contains(err.Error(), ".mcp.json") || !strings.Contains(err.Error(), "mcpServers.bad.type") {
		t.Errorf("a bad .mcp.json: %v, want an error naming the file and the entry", err)
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "1", "EMPTY": ""}
	look := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	no := func(string) bool { return false }
	for in, want := range map[string]string{"x${A}y": "x1y", "${B:-d}": "d", "${EMPTY:-d}": "d", "${EMPTY}": "", "plain": "plain", "${A}${A}": "11"} {
		if got, err := expand(in, look, no); err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := expand("${MISSING}", look, no); err == nil || !strings.Contains(err.Error(), "MISSING is not set") {
		t.Errorf("a missing variable: %v", err)
	}
}
