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

// post sends body to the server in format and returns the answer's text.
func post(t *testing.T, srv *Server, format, body string) (string, int) {
	t.Helper()
	url := srv.OpenAIURL() + "/chat/completions"
	if format == "anthropic" {
		url = srv.URL + "/v1/messages"
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Content []struct{ Text string } `json:"content"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	switch {
	case len(out.Choices) == 1:
		return out.Choices[0].Message.Content, resp.StatusCode
	case len(out.Content) > 0:
		return out.Content[0].Text, resp.StatusCode
	}
	return "", resp.StatusCode
}

// A script answers what it did not foresee: a turn kept for an agent, one
// kept for the answer to a tool result (in both formats), and a default
// turn that is never used up, so an extra request shifts nothing.
func TestTurnsForAgentsToolResultsAndDefault(t *testing.T) {
	srv := NewServer(t,
		Turn{Text: "tapestry starts", Agent: "tapestry"},
		Turn{Text: "read it", AfterTool: "hello from the file"},
		Turn{Text: "anthropic read it", AfterTool: "anthropic file"},
		Turn{Text: "fallback", Default: true},
	)
	openai := func(system, last string) string {
		return `{"model":"m","messages":[{"role":"system","content":"` + system + `"},` + last + `]}`
	}
	user := `{"role":"user","content":"hi"}`
	tool := `{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"hello from the file"}`

	// An extra request first: the default answers it, and shifts nothing.
	if got, _ := post(t, srv, "openai", openai("You are Loom.", user)); got != "fallback" {
		t.Errorf("an unforeseen request got %q, want the default", got)
	}
	if got, _ := post(t, srv, "openai", openai("You are Tapestry.", user)); got != "tapestry starts" {
		t.Errorf("tapestry got %q, want its turn", got)
	}
	if got, _ := post(t, srv, "openai", openai("You are Tapestry.", tool)); got != "read it" {
		t.Errorf("the answer to the read got %q, want the after_tool turn", got)
	}
	anth := `{"model":"m","max_tokens":10,"system":"You are Thread.","messages":[{"role":"user","content":"x"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"the anthropic file says hi"}]}]}]}`
	if got, _ := post(t, srv, "anthropic", anth); got != "anthropic read it" {
		t.Errorf("the Anthropic answer to a tool result got %q, want its after_tool turn", got)
	}
	for range 3 {
		if got, code := post(t, srv, "openai", openai("You are Tapestry.", user)); got != "fallback" || code != http.StatusOK {
			t.Errorf("a request past the script got %q (%d), want the default again", got, code)
		}
	}
	if n := srv.Remaining(); n != 0 {
		t.Errorf("Remaining() = %d, want 0 (a default turn is not counted)", n)
	}
}
