package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

// TestLargeToolResultsReachTheModel runs weave chat -p where the model asks
// for five bash commands at once, each printing more than the bash cap, and
// one that prints 6 MB under a raised cap: together and alone they are
// more than a plugin message held by default (4 MiB). The turn goes on,
// the model gets every result, the one past the host's cap on a result with
// its start, its end and a note, and the transcript records all six.
func TestLargeToolResultsReachTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	var calls []modeltest.ToolCall
	for i := range 5 {
		calls = append(calls, modeltest.ToolCall{ID: "big" + string(rune('1'+i)), Name: "bash",
			Args: `{"command":"head -c 1500000 /dev/zero | tr '\\0' a"}`})
	}
	calls = append(calls, modeltest.ToolCall{ID: "huge", Name: "bash",
		Args: `{"command":"printf BEGIN; head -c 6000000 /dev/zero | tr '\\0' b; printf END"}`})
	srv := modeltest.NewServer(t,
		modeltest.Turn{ToolCalls: calls},
		modeltest.Turn{Text: "All six ran."})
	dir := project(t, nil)
	env := append(chatEnv(t, srv), "WEAVE_TOOLS_BASH_MAX_OUTPUT_BYTES=16000000")
	// The five big ones stay under the bash cap set here, the huge one
	// passes the host's cap on a result.
	code, out, errOut := runWeave(t, bin, dir, env, "chat", "-p", "run them")
	if code != 0 || !strings.Contains(out, "All six ran.") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and the final answer", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	var body struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := reqs[1].Decode(&body); err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for _, m := range body.Messages {
		if m.Role == "tool" {
			s, _ := m.Content.(string)
			if s == "" {
				b, _ := json.Marshal(m.Content)
				s = string(b)
			}
			results[m.ToolCallID] = s
		}
	}
	if len(results) != 6 {
		t.Fatalf("the model got %d tool results, want 6", len(results))
	}
	for id, r := range results {
		if strings.Contains(r, "did not finish") || strings.Contains(r, "grpc") {
			t.Errorf("result %s = %.200q, want the command's output", id, r)
		}
	}
	huge := results["huge"]
	if len(huge) > 2<<20+1024 || !strings.HasPrefix(huge, "BEGIN") || !strings.Contains(huge, "END") || !strings.Contains(huge, "bytes cut from the middle of this tool output") {
		t.Errorf("the huge result is %d bytes, %.40q...%.80q; want at most 2 MiB with its start, its end and a note", len(huge), huge, huge[max(0, len(huge)-80):])
	}
	transcript, err := os.ReadFile(filepath.Join(dir, ".weave", "sessions", latestSessionFile(t, dir)))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(transcript), `"role":"tool"`); n != 6 || strings.Contains(string(transcript), "did not finish") {
		t.Errorf("the transcript holds %d tool results (did not finish: %v), want the 6 that ran", n, strings.Contains(string(transcript), "did not finish"))
	}
}

// latestSessionFile names the only transcript under dir.
func latestSessionFile(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, ".weave", "sessions"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("sessions: %v, %v; want one transcript", ents, err)
	}
	return ents[0].Name()
}
