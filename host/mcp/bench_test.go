package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host/mcp"
	"github.com/weavehq/weave/host/mcp/mcptest"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/plugins"
)

// allowHook is a tool.execute.before hook on the MCP tools of server t, as
// a PreToolUse matcher "mcp__t__.*" declares them: it runs on every call.
type allowHook struct{ info plugins.Info }

func (h allowHook) Info(context.Context) (plugins.Info, error) { return h.info, nil }
func (allowHook) Handle(context.Context, plugins.Event) (plugins.Decision, error) {
	return plugins.Decision{Action: plugins.Allow}, nil
}

func serverCommand(b *testing.B) *exec.Cmd {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), mcptest.ServeEnv+"=1")
	return cmd
}

// BenchmarkMCPCallThroughGate is an echo call to a stdio MCP server as an
// agent makes it: the tool door (the gate, a hook on mcp__t__*, the result
// cap), the manager, the server.
func BenchmarkMCPCallThroughGate(b *testing.B) {
	dir := b.TempDir()
	cmd := serverCommand(b)
	m := mcp.New([]mcp.Spec{{Name: "t", MCPServerConfig: config.MCPServerConfig{Type: config.MCPStdio, Command: cmd.Path, Env: map[string]string{mcptest.ServeEnv: "1"}}}},
		mcp.Options{Project: dir})
	ctx := context.Background()
	m.Start(ctx)
	b.Cleanup(func() { _ = m.Close(ctx) })
	cfg := config.Default()
	g, err := tools.NewGate(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	hook := allowHook{plugins.Info{Name: "mcp-guard", Kind: plugins.KindHook, Events: []string{plugins.EventToolExecuteBefore},
		Tools: map[string][]string{plugins.EventToolExecuteBefore: {"mcp__t__*"}}}}
	p, err := hooks.NewPipeline([]hooks.Registered{{Hook: hook, Info: hook.info, Source: "builtin"}}, hooks.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tl, err := tools.New(dir, cfg, g, p, tools.WithMCP(m))
	if err != nil {
		b.Fatal(err)
	}
	call := plugins.ToolCall{Tool: "mcp__t__echo", Args: map[string]any{"message": "hi"}}
	c := tools.Caller{Agent: "tapestry"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := tl.Call(ctx, c, "s", call)
		if err != nil || res.IsError || res.Output != "Echo: hi" {
			b.Fatalf("Call = %+v, %v", res, err)
		}
	}
}

// BenchmarkMCPCallDirect is the same call made with the SDK's client alone,
// to the same server over stdio: the floor.
func BenchmarkMCPCallDirect(b *testing.B) {
	ctx := context.Background()
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &sdk.CommandTransport{Command: serverCommand(b), TerminateDuration: time.Second}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sess.Close() })
	params := &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := sess.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("CallTool = %+v, %v", res, err)
		}
	}
}
