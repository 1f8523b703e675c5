package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/host/model/modeltest"
)

// mcpServersEnv names the directory the reference MCP servers are
// installed in (npm install --prefix; .ci/run does it with the versions
// pinned).
const mcpServersEnv = "MCP_SERVERS_TEST_DIR"

// npmServer is the entry script of a reference server installed under
// $MCP_SERVERS_TEST_DIR. Without it the test is skipped, unless CI is set:
// then it fails, since CI installs them.
func npmServer(t *testing.T, pkg string) string {
	t.Helper()
	dir := os.Getenv(mcpServersEnv)
	script := filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	_, err := os.Stat(script)
	_, noNode := exec.LookPath("node")
	if dir != "" && err == nil && noNode == nil {
		return script
	}
	msg := fmt.Sprintf("the reference MCP server %s is not installed: npm install --prefix DIR @modelcontextprotocol/%s, then set %s=DIR (node is needed too)", pkg, pkg, mcpServersEnv)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func writeMCPConfig(t *testing.T, dir, cfg string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReferenceServerEverything: @modelcontextprotocol/server-everything's
// echo, over stdio from .mcp.json, and over Streamable HTTP and SSE from
// config, called by the fake model through the binary.
func TestReferenceServerEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	script := npmServer(t, "server-everything")
	stdio := `{"mcpServers": {"everything": {"command": "node", "args": [%q, "stdio"]}}}`
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"stdio from .mcp.json", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(fmt.Sprintf(stdio, script)), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"streamable http", func(t *testing.T, dir string) {
			port := startNodeServer(t, script, "streamableHttp")
			writeMCPConfig(t, dir, fmt.Sprintf("mcp_servers:\n  everything:\n    type: http\n    url: http://127.0.0.1:%d/mcp\n", port))
		}},
		{"sse", func(t *testing.T, dir string) {
			port := startNodeServer(t, script, "sse")
			writeMCPConfig(t, dir, fmt.Sprintf("mcp_servers:\n  everything:\n    type: sse\n    url: http://127.0.0.1:%d/sse\n", port))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := project(t, nil)
			c.setup(t, dir)
			srv := modeltest.NewServer(t,
				modeltest.Turn{ToolCalls: []modeltest.ToolCall{{ID: "e1", Name: "mcp__everything__echo", Args: `{"message":"hello from weave"}`}}},
				modeltest.Turn{Text: "Echoed."})
			chatMCP(t, dir, srv)
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			if _, ok := decodeMCPChat(t, reqs[0]).tool("mcp__everything__echo"); !ok {
				t.Fatal("mcp__everything__echo is not offered")
			}
			if got := decodeMCPChat(t, reqs[1]).toolResult("e1"); !strings.Contains(got, "Echo: hello from weave") {
				t.Errorf("echo's result %q", got)
			}
		})
	}
}

// TestReferenceServerFilesystem: @modelcontextprotocol/server-filesystem,
// allowed the project, reads a file and lists the directory for the model.
func TestReferenceServerFilesystem(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	script := npmServer(t, "server-filesystem")
	dir := project(t, nil)
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi from the project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeMCPConfig(t, dir, fmt.Sprintf("mcp_servers:\n  fs:\n    command: node\n    args: [%q, %q]\n", script, dir))
	srv := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: []modeltest.ToolCall{
			{ID: "r1", Name: "mcp__fs__read_text_file", Args: fmt.Sprintf(`{"path":%q}`, filepath.Join(dir, "hello.txt"))},
			{ID: "l1", Name: "mcp__fs__list_directory", Args: fmt.Sprintf(`{"path":%q}`, dir)},
			{ID: "o1", Name: "mcp__fs__read_text_file", Args: `{"path":"/etc/hostname"}`},
		}},
		modeltest.Turn{Text: "Read."})
	chatMCP(t, dir, srv)
	second := decodeMCPChat(t, srv.Requests()[1])
	if got := second.toolResult("r1"); !strings.Contains(got, "hi from the project") {
		t.Errorf("read_text_file: %q", got)
	}
	if got := second.toolResult("l1"); !strings.Contains(got, "hello.txt") {
		t.Errorf("list_directory: %q", got)
	}
	if got := second.toolResult("o1"); !strings.Contains(strings.ToLower(got), "denied") && !strings.Contains(strings.ToLower(got), "outside") {
		t.Errorf("a path outside the allowed directory: %q, want the server's refusal", got)
	}
}

// startNodeServer runs the everything server on a free port with the
// transport given and waits until it accepts connections.
func startNodeServer(t *testing.T, script, transport string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", script, transport)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return port
		}
		if ctx.Err() != nil {
			t.Fatalf("the %s server did not listen on port %d: %v", transport, port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
