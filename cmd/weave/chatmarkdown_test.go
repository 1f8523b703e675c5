package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestBlocksEnd: a block is complete at a blank line, never inside a
// fenced code block, whose blank lines belong to it.
func TestBlocksEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the complete blocks
	}{
		{"no blank line yet", ""},
		{"para one\n\npara two", "para one\n\n"},
		{"a\n\nb\n\nc", "a\n\nb\n\n"},
		{"```go\nx := 1\n\ny := 2\n", ""},
		{"```go\nx := 1\n\ny := 2\n```\n\nafter", "```go\nx := 1\n\ny := 2\n```\n\n"},
		{"~~~~\n```\n\n~~~~\n\n", "~~~~\n```\n\n~~~~\n\n"},
		{"    ```indented code, not a fence\n\nnext", "    ```indented code, not a fence\n\n"},
	} {
		if got := tc.in[:blocksEnd(tc.in)]; got != tc.want {
			t.Errorf("blocksEnd(%q) keeps %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestMarkdownStreamByBlocks: an answer streamed in small pieces prints
// each block once it is complete, rendered, and the rest at the end; a
// code block split by a blank line is rendered whole.
func TestMarkdownStreamByBlocks(t *testing.T) {
	var out strings.Builder
	m, err := newMarkdownStream(&out, 80, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	answer := "# Title\n\nSome **bold** text.\n\n```sh\necho one\n\necho two\n```\n\nThe end."
	for _, r := range answer {
		m.write(string(r))
		if s := ansi.Strip(out.String()); strings.Contains(s, "echo one") && !strings.Contains(s, "echo two") {
			t.Fatalf("a code block was printed in halves:\n%s", s)
		}
	}
	before := ansi.Strip(out.String())
	if !strings.Contains(before, "Title") || !strings.Contains(before, "echo two") || strings.Contains(before, "The end.") {
		t.Errorf("before the end, printed:\n%s\nwant the complete blocks only", before)
	}
	m.flush()
	got := ansi.Strip(out.String())
	for _, w := range []string{"Title", "bold", "echo one", "echo two", "The end."} {
		if !strings.Contains(got, w) {
			t.Errorf("rendered answer lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "**") || strings.Contains(got, "# Title") {
		t.Errorf("raw markdown left:\n%s", got)
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.HasSuffix(l, " ") {
			t.Errorf("line %q keeps glamour's padding", l)
		}
	}
}

// TestChatHistoryBounded: the history file is its owner's, holds whole
// messages, and is cut back to the newest chatHistoryMax as it grows.
func TestChatHistoryBounded(t *testing.T) {
	state := t.TempDir()
	env := map[string]string{"XDG_STATE_HOME": state, "HOME": "/nonexistent"}
	path := chatHistoryPath("/some/project", func(k string) string { return env[k] })
	if !strings.HasPrefix(path, filepath.Join(state, "weave", "history")) {
		t.Fatalf("history at %s, want under the state directory", path)
	}
	if other := chatHistoryPath("/other/project", func(k string) string { return env[k] }); other == path {
		t.Error("two projects share a history file")
	}
	h := loadChatHistory(path)
	for i := range 2*chatHistoryMax + 10 {
		if err := h.add("message " + strings.Repeat("x", i%3) + "\nline two " + string(rune('a'+i%26)) + " " + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("history file %v, %v; want mode 0600", fi, err)
	}
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n > 2*chatHistoryMax {
		t.Errorf("history file holds %d lines, want at most %d", n, 2*chatHistoryMax)
	}
	again := loadChatHistory(path)
	if len(again.entries) != chatHistoryMax {
		t.Fatalf("reloaded %d entries, want %d", len(again.entries), chatHistoryMax)
	}
	if last := again.entries[len(again.entries)-1]; !strings.HasSuffix(last, strconv.Itoa(2*chatHistoryMax+9)) || !strings.Contains(last, "\n") {
		t.Errorf("newest entry %q, want the last message whole", last)
	}
	if got := (recall{again}).At(0); strings.Contains(got, "\n") || !strings.Contains(got, recallBreak) {
		t.Errorf("recalled %q, want its line break shown as %s", got, recallBreak)
	}
}
