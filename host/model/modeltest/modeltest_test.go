package modeltest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseScript(t *testing.T) {
	want := []Turn{
		{Text: "hi", ToolCalls: []ToolCall{{Name: "read", Args: `{"path":"a b"}`}, {ID: "x", Name: "glob", Args: `{"pattern":"*"}`}}},
		{Status: 429, RetryAfter: "1", ChunkDelay: Duration(200 * time.Millisecond)},
	}
	for name, src := range map[string]string{
		"array":  `[{"text":"hi","tool_calls":[{"name":"read","args":{"path": "a b"}},{"id":"x","name":"glob","args":"{\"pattern\":\"*\"}"}]},{"status":429,"retry_after":"1","chunk_delay":"200ms"}]`,
		"object": `{"turns":[{"text":"hi","tool_calls":[{"name":"read","args":{ "path" : "a b" }},{"id":"x","name":"glob","args":{"pattern":"*"}}]},{"status":429,"retry_after":"1","chunk_delay":200}]}`,
	} {
		got, err := ParseScript([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b <-chan struct{}) bool { return a == b })); diff != "" {
			t.Errorf("%s: ParseScript (-want +got):\n%s", name, diff)
		}
	}
	if _, err := ParseScript([]byte(`{"turn": []}`)); err == nil || !strings.Contains(err.Error(), "array of turns") {
		t.Errorf("ParseScript(misspelt key) error = %v, want one saying what a script is", err)
	}
}
