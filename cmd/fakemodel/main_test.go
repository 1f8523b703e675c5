package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestServesAScript builds the command, starts it on a script, talks to it
// with the OpenAI SDK and stops it with SIGTERM.
func TestServesAScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "fakemodel")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script := filepath.Join(dir, "turns.json")
	if err := os.WriteFile(script, []byte(`[
  {"text": "Let me look.", "tool_calls": [{"name": "read", "args": {"path": "go.mod"}}]},
  {"text": "It is a Go module."}
]`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--script", script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("read URL: %v (stderr: %s)", err, stderr.String())
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line = %q, want the server's loopback URL", line)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chat := openai.NewChatCompletionService(option.WithBaseURL(url+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "fake", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("what is this?")}}
	first, err := chat.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if tc := first.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "read" || tc[0].Function.Arguments != `{"path":"go.mod"}` {
		t.Errorf("first answer's tool calls = %+v, want read of go.mod", tc)
	}
	stream := chat.NewStreaming(ctx, params)
	var text strings.Builder
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "It is a Go module." {
		t.Errorf("streamed text = %q, want the second turn", text.String())
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	if !strings.Contains(stderr.String(), "#2 openai /v1/chat/completions") || strings.Contains(stderr.String(), "unused") {
		t.Errorf("stderr = %q, want a line per request and no key", stderr.String())
	}
}
