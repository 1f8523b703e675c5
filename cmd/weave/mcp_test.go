package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/weavehq/weave/host/mcp/mcptest"
	"github.com/weavehq/weave/host/model/modeltest"
)

// mcpProject is a project whose config adds this test binary as the stdio
// MCP server t (the tools of mcptest; extra filler tools), and more config.
func mcpProject(t *testing.T, extraTools int, more string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := project(t, nil)
	cfg := fmt.Sprintf("mcp_servers:\n  t:\n    command: %q\n    env:\n      %s: \"1\"\n      %s: \"%d\"\n%s", exe, mcptest.ServeEnv, mcptest.ToolsEnv, extraTools, more)
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mcpChatBody is what the tests read of a model request.
type mcpChatBody struct {
	Messages []struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func decodeMCPChat(t *testing.T, r modeltest.Request) mcpChatBody {
	t.Helper()
	var b mcpChatBody
	if err := r.Decode(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// toolResult is the result the request carries for call id.
func (b mcpChatBody) toolResult(id string) string {
	for _, m := range b.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			if s, ok := m.Content.(string); ok {
				return s
			}
			raw, _ := json.Marshal(m.Content)
			return string(raw)
		}
	}
	return "<no result for " + id + ">"
}

func (b mcpChatBody) tool(name string) (json.RawMessage, bool) {
	for _, tl := range b.Tools {
		if tl.Function.Name == name {
			return tl.Function.Parameters, true
		}
	}
	return nil, false
}

func chatMCP(t *testing.T, dir string, srv *modeltest.Server, extraEnv ...string) (string, string) {
	t.Helper()
	code, out, errOut := runWeave(t, buildWeave(t), dir, append(chatEnv(t, srv), extraEnv...), "chat", "-p", "go")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	return out, errOut
}

// TestMCPToolsThroughTheBinary: an MCP server's tools reach the model with
// their schemas beside the built-in ones, and a call reaches the server
// through the host; a server that dies in the middle of a call fails that
// call naming the server and is restarted for the next.
func TestMCPToolsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	dir := mcpProject(t, 0, "")
	srv := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "e1", Name: "mcp__t__echo", Args: `{"message":"hello"}`}, {ID: "i1", Name: "mcp__t__image", Args: `{}`}}},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "mcp__t__crash", Args: `{}`}}},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "e2", Name: "mcp__t__echo", Args: `{"message":"again"}`}, {ID: "p1", Name: "mcp__t__pid", Args: `{}`}}},
		modeltest.Turn{Text: "Done."})
	out, _ := chatMCP(t, dir, srv)
	if !strings.Contains(out, "Done.") {
		t.Errorf("stdout %q", out)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	first := decodeMCPChat(t, reqs[0])
	schema, ok := first.tool("mcp__t__echo")
	if !ok || !strings.Contains(string(schema), `"message"`) {
		t.Fatalf("first request's tools lack mcp__t__echo with its schema (%s)", schema)
	}
	if _, ok := first.tool("read"); !ok {
		t.Errorf("the built-in tools are not in the same list")
	}
	second := decodeMCPChat(t, reqs[1])
	if got := second.toolResult("e1"); got != "Echo: hello" {
		t.Errorf("echo's result %q", got)
	}
	if got := second.toolResult("i1"); !strings.Contains(got, "[image: image/png, 68 bytes") {
		t.Errorf("image's result %q, want a note with type and size", got)
	}
	if got := decodeMCPChat(t, reqs[2]).toolResult("c1"); !strings.Contains(got, "MCP server t stopped during the call") {
		t.Errorf("the call the server died in: %q, want a failure naming the server", got)
	}
	last := decodeMCPChat(t, reqs[3])
	if got := last.toolResult("e2"); got != "Echo: again" {
		t.Errorf("echo after the restart: %q", got)
	}
	// weave has exited: the restarted server is gone with it.
	pid, err := strconv.Atoi(last.toolResult("p1"))
	if err != nil {
		t.Fatalf("pid: %q", last.toolResult("p1"))
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the MCP server (pid %d) outlived weave chat", pid)
	}
}

// TestMCPGateAndHooks: a role whose row has no MCP server is refused with
// the gate's words and is not offered the tools; a PreToolUse hook whose
// matcher names an MCP tool blocks it.
func TestMCPGateAndHooks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	t.Run("role without MCP", func(t *testing.T) {
		dir := mcpProject(t, 0, "agents:\n  loom:\n    mcp: []\n")
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "e1", Name: "mcp__t__echo", Args: `{"message":"hello"}`}}},
			modeltest.Turn{Text: "Refused."})
		chatMCP(t, dir, srv)
		reqs := srv.Requests()
		if _, ok := decodeMCPChat(t, reqs[0]).tool("mcp__t__echo"); ok {
			t.Error("loom without MCP servers is offered mcp__t__echo")
		}
		want := "denied by the capability matrix (loom has no MCP server t (config agents.loom.mcp gives it none))"
		if got := decodeMCPChat(t, reqs[1]).toolResult("e1"); got != want {
			t.Errorf("result %q, want %q", got, want)
		}
	})
	t.Run("read-only role through delegation", func(t *testing.T) {
		dir := mcpProject(t, 0, "")
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "d1", Name: "task", Args: `{"agent":"thread","prompt":"echo"}`}}},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "e1", Name: "mcp__t__echo", Args: `{"message":"hello"}`}}},
			modeltest.Turn{Text: "Thread could not."},
			modeltest.Turn{Text: "Done."})
		chatMCP(t, dir, srv)
		reqs := srv.Requests()
		if _, ok := decodeMCPChat(t, reqs[1]).tool("mcp__t__echo"); ok {
			t.Error("thread, read-only, is offered mcp__t__echo")
		}
		if got := decodeMCPChat(t, reqs[2]).toolResult("e1"); !strings.Contains(got, "thread has no MCP server t (thread is read-only") {
			t.Errorf("result %q, want the gate's refusal", got)
		}
	})
	t.Run("PreToolUse matcher", func(t *testing.T) {
		hook := "hooks:\n  PreToolUse:\n    - matcher: mcp__t__.*\n      hooks:\n        - type: command\n          command: \"echo 'no MCP echo today' >&2; exit 2\"\n"
		dir := mcpProject(t, 0, hook)
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "e1", Name: "mcp__t__echo", Args: `{"message":"hello"}`}, {ID: "r1", Name: "glob", Args: `{"pattern":"*"}`}}},
			modeltest.Turn{Text: "Blocked."})
		chatMCP(t, dir, srv)
		second := decodeMCPChat(t, srv.Requests()[1])
		if got := second.toolResult("e1"); !strings.Contains(got, "blocked by hook") || !strings.Contains(got, "no MCP echo today") {
			t.Errorf("echo's result %q, want the hook's block", got)
		}
		if got := second.toolResult("r1"); strings.Contains(got, "blocked") {
			t.Errorf("glob, which the matcher does not match, was blocked: %q", got)
		}
	})
}

// TestMCPManyToolsDeferred: with 200 MCP tools the first request stays
// under twice the size of one without them, and the model finds a tool
// with mcp_tool_search and calls it.
func TestMCPManyToolsDeferred(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bare := modeltest.NewServer(t, modeltest.Turn{Text: "ok"})
	chatMCP(t, project(t, nil), bare)
	base := len(bare.Requests()[0].Body)

	dir := mcpProject(t, 200, "")
	srv := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "s1", Name: "mcp_tool_search", Args: `{"query":"filler number 42"}`}}},
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "f1", Name: "mcp__t__filler_042", Args: `{"query":"x"}`}}},
		modeltest.Turn{Text: "Done."})
	chatMCP(t, dir, srv)
	reqs := srv.Requests()
	first := len(reqs[0].Body)
	t.Logf("first request: %d bytes without MCP, %d with 206 MCP tools", base, first)
	if first >= 2*base {
		t.Errorf("the first request is %d bytes with 206 MCP tools, %d without: want under twice", first, base)
	}
	b0 := decodeMCPChat(t, reqs[0])
	if _, ok := b0.tool("mcp_tool_search"); !ok {
		t.Fatal("mcp_tool_search is not offered")
	}
	b1 := decodeMCPChat(t, reqs[1])
	if got := b1.toolResult("s1"); !strings.Contains(got, "mcp__t__filler_042") {
		t.Errorf("search result %q", got)
	}
	if _, ok := b1.tool("mcp__t__filler_042"); !ok {
		t.Error("the tool found is not offered after the search")
	}
	if got := decodeMCPChat(t, reqs[2]).toolResult("f1"); got != "filler_042 done" {
		t.Errorf("the found tool's result %q", got)
	}
}

// TestMCPListAndTest: weave mcp list shows the server and its tools, as
// JSON too; weave mcp test connects to one; a server that cannot start is
// failed with its reason; weave doctor checks each.
func TestMCPListAndTest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	dir := mcpProject(t, 0, "  broken:\n    command: /nonexistent/mcp-server\n")
	// The broken server is under mcp_servers: the config's lines above end
	// inside that mapping.
	r := runBinIn(t, dir, "mcp", "list")
	if r.code != 0 || !strings.Contains(r.out, "mcp__t__echo") || !strings.Contains(r.out, "ready") || !strings.Contains(r.out, "failed") {
		t.Errorf("mcp list: exit %d\n%s%s", r.code, r.out, r.err)
	}
	var list []struct {
		Name, State string
		ToolCount   int `json:"tool_count"`
	}
	r = runBinIn(t, dir, "mcp", "list", "--json")
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || len(list) != 2 || list[1].Name != "t" || list[1].ToolCount != 6 {
		t.Errorf("mcp list --json: %v %+v\n%s", err, list, r.out)
	}
	r = runBinIn(t, dir, "mcp", "test", "t")
	if r.code != 0 || !strings.Contains(r.out, "t: connected (stdio, from config), 6 tools") {
		t.Errorf("mcp test t: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r = runBinIn(t, dir, "mcp", "test", "broken")
	if r.code != 1 || !strings.Contains(r.err, "MCP server broken (stdio, from config) did not start") {
		t.Errorf("mcp test broken: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r = runBinIn(t, dir, "mcp", "test", "nosuch")
	if r.code != 2 || !strings.Contains(r.err, "the servers are broken, t") {
		t.Errorf("mcp test nosuch: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r = runBinIn(t, dir, "doctor")
	if !strings.Contains(r.out+r.err, "broken (stdio, from config)") {
		t.Errorf("doctor does not name the server that does not start:\n%s%s", r.out, r.err)
	}
}
