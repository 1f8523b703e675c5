// Package mcptest is an MCP server for tests, on the official Go SDK: the
// tools echo, image, structured, env, pid, crash (the stdio server exits in the
// middle of the call) and any number of filler tools, served over stdio by
// a test binary (ServeIfAsked in TestMain) or in memory.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment variables of a test binary that serves as a stdio server.
const (
	// ServeEnv set to "1" makes ServeIfAsked serve over stdio and exit.
	ServeEnv = "MCPTEST_SERVE"
	// ToolsEnv adds that many filler tools (filler_000, ...).
	ToolsEnv = "MCPTEST_TOOLS"
	// EnvTool names a variable the tool "env" answers the value of.
	EnvTool = "env"
)

// NewServer returns the test server with extra filler tools.
func NewServer(extra int, exit func()) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	obj := func(props string, req ...string) json.RawMessage {
		r, _ := json.Marshal(req)
		return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(r) + `}`)
	}
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes back the message.", InputSchema: obj(`"message":{"type":"string"}`, "message")},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ Message string }
			_ = json.Unmarshal(r.Params.Arguments, &in)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: " + in.Message}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "image", Description: "Returns a small PNG.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a picture:"}, &sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 68)}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "structured", Description: "Returns structured content only.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"sum": 3}}, nil
		})
	s.AddTool(&sdk.Tool{Name: EnvTool, Description: "Answers the value of an environment variable of the server.", InputSchema: obj(`"name":{"type":"string"}`, "name")},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ Name string }
			_ = json.Unmarshal(r.Params.Arguments, &in)
			v, ok := os.LookupEnv(in.Name)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("%s set=%v value=%q", in.Name, ok, v)}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "pid", Description: "Answers the server's process ID.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "crash", Description: "The server exits in the middle of this call.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if exit != nil {
				exit()
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "not crashed"}}}, nil
		})
	for i := range extra {
		name := fmt.Sprintf("filler_%03d", i)
		s.AddTool(&sdk.Tool{Name: name, Description: fmt.Sprintf("Filler tool number %d, which does nothing useful but takes room in a tool list the way real tools do.", i),
			InputSchema: obj(`"query":{"type":"string","description":"what to look up"},"limit":{"type":"integer","description":"most results"}`, "query")},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " done"}}}, nil
			})
	}
	return s
}

// ServeIfAsked serves the test server over stdio and exits when ServeEnv
// is "1" (call it first in TestMain); else it returns.
func ServeIfAsked() {
	if os.Getenv(ServeEnv) != "1" {
		return
	}
	extra, _ := strconv.Atoi(os.Getenv(ToolsEnv))
	s := NewServer(extra, func() { os.Exit(3) })
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
