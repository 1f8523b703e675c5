package chat

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/plugins"
)

// TestHugeMessagesStayReadable: an answer of 3 MiB of control characters
// (each written as \u0001, six-fold) and a 20 MiB tool result would make
// transcript lines longer than the reader takes; the writer cuts them, head
// and tail kept with a note, and the session stays listed and readable.
func TestHugeMessagesStayReadable(t *testing.T) {
	answer := "START" + strings.Repeat("\x01", 3<<20) + "END"
	srv := modeltest.NewServer(t, modeltest.Turn{Text: answer})
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Model = config.ModelConfig{Provider: "openai", Name: "m", BaseURL: srv.OpenAIURL()}
	d := New(Options{Project: dir, Config: cfg, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})

	result := "HEAD" + strings.Repeat("r", 20<<20) + "TAIL"
	req := plugins.ChatRequest{Messages: []plugins.ChatMessage{
		{Role: plugins.RoleUser, Content: "run it"},
		{Role: plugins.RoleAssistant, ToolCalls: []plugins.ToolCall{{ID: "c1", Tool: "bash", Args: map[string]any{"command": "yes"}}}},
		{Role: plugins.RoleTool, ToolCallID: "c1", Content: result},
	}}
	resp, err := d.Complete(context.Background(), "s1", "loom", req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != answer {
		t.Fatalf("the answer came back as %d bytes, want %d", len(resp.Message.Content), len(answer))
	}

	f, err := os.Open(filepath.Join(dir, ".weave", "sessions", "s1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := bufio.NewReader(f)
	for {
		line, err := rd.ReadString('\n')
		if len(line) >= maxSessionLine {
			t.Errorf("a transcript line of %d bytes, want fewer than %d", len(line), maxSessionLine)
		}
		if err != nil {
			break
		}
	}

	list, err := Sessions(dir)
	if err != nil || len(list) != 1 || list[0].ID != "s1" || list[0].Messages != 4 {
		t.Fatalf("Sessions = %+v, %v; want s1 with its 4 messages", list, err)
	}
	s, err := ReadSession(dir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var gotAnswer, gotResult string
	for _, l := range s.Lines {
		if l.Message == nil {
			continue
		}
		switch l.Message.Role {
		case plugins.RoleAssistant:
			gotAnswer = l.Message.Content
		case plugins.RoleTool:
			gotResult = l.Message.Content
		}
	}
	for _, c := range []struct{ name, got, head, tail string }{
		{"answer", gotAnswer, "START", "END"},
		{"tool result", gotResult, "HEAD", "TAIL"},
	} {
		if !strings.HasPrefix(c.got, c.head) || !strings.HasSuffix(c.got, c.tail) || !strings.Contains(c.got, "bytes cut from the middle of this message") {
			t.Errorf("the %s on file (%d bytes) does not keep its start and end with a note", c.name, len(c.got))
		}
	}
	// A resumed chat reads the same file.
	hist, err := New(Options{Project: dir, Config: cfg, Getenv: func(string) string { return "" }}).History("s1", "loom")
	if err != nil || len(hist) != 4 {
		t.Errorf("History = %d messages, %v; want the 4 on file", len(hist), err)
	}
}

// TestEncodeLineFitsAtTheBoundary: a line just under the limit is written
// whole, one just over it is cut, and either is read back.
func TestEncodeLineFitsAtTheBoundary(t *testing.T) {
	base, err := encodeLine(SessionLine{Type: lineMessage, Agent: "a", Message: &plugins.ChatMessage{Role: plugins.RoleUser}})
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range []int{-1, 0, 1, 2} {
		n := maxSessionLine - len(base) + extra
		line := SessionLine{Type: lineMessage, Agent: "a", Message: &plugins.ChatMessage{Role: plugins.RoleUser, Content: strings.Repeat("x", n)}}
		b, err := encodeLine(line)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(nil, maxSessionLine)
		if !sc.Scan() {
			t.Errorf("content of %d bytes: a line of %d bytes the reader refuses: %v", n, len(b), sc.Err())
		}
	}
}
