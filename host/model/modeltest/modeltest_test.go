package modeltest

import (
	"encoding/json"
	"net/http"
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

// TestMatchKeepsATurnForItsRequest asks as two agents would at once, in
// the order the script does not expect: each gets the turn kept for it.
func TestMatchKeepsATurnForItsRequest(t *testing.T) {
	srv := NewServer(t,
		Turn{Text: "for weft", Match: "You are Weft"},
		Turn{Text: "for warp", Match: "You are Warp"},
		Turn{Text: "for anyone"},
	)
	ask := func(system string) string {
		t.Helper()
		body := `{"model":"m","messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"hi"}]}`
		resp, err := http.Post(srv.OpenAIURL()+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
			t.Fatalf("answer: %v, %+v", err, out)
		}
		return out.Choices[0].Message.Content
	}
	if got := ask("You are Warp."); got != "for warp" {
		t.Errorf("warp got %q, want its own turn", got)
	}
	if got := ask("You are Thread."); got != "for anyone" {
		t.Errorf("thread got %q, want the first turn without a match", got)
	}
	if got := ask("You are Weft."); got != "for weft" {
		t.Errorf("weft got %q, want its own turn", got)
	}
	if n := srv.Remaining(); n != 0 {
		t.Errorf("Remaining() = %d, want 0", n)
	}
}
