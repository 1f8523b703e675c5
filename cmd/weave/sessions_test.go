package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStatusShowsThePlanTokens: weave status adds up the token use of the
// sessions that ran the active plan (state.json's session_ids) and of the
// sessions they delegated to, and of nothing else.
func TestStatusShowsThePlanTokens(t *testing.T) {
	dir := project(t, map[string]string{"bad": failPlan})
	if code, _, _ := runCLI(t, "--dir", dir, "start-work", "bad"); code != exitFailed {
		t.Fatalf("start-work exit = %d, want 1", code)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".weave", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		SessionIDs []string `json:"session_ids"`
	}
	if err := json.Unmarshal(b, &st); err != nil || len(st.SessionIDs) != 1 {
		t.Fatalf("state.json session_ids = %v, %v", st.SessionIDs, err)
	}
	id := st.SessionIDs[0]
	usage := func(agent string, in, out, read int) string {
		return `{"time":"2026-01-01T12:00:00Z","type":"usage","agent":"` + agent + `","usage":{"input_tokens":` +
			strconv.Itoa(in) + `,"output_tokens":` + strconv.Itoa(out) + `,"cache_read_tokens":` + strconv.Itoa(read) + `}}` + "\n"
	}
	files := map[string]string{
		id:                    usage("tapestry", 1000, 50, 300) + usage("tapestry", 1200, 40, 0),
		id + ".thread-abc123": `{"time":"2026-01-01T12:00:00Z","type":"parent","agent":"tapestry","parent":"` + id + `"}` + "\n" + usage("thread", 500, 10, 0),
		"chat-other":          usage("loom", 99999, 1, 0),
	}
	for name, body := range files {
		writeFile(t, filepath.Join(dir, ".weave", "sessions", name+".jsonl"), body)
	}
	code, out, errOut := runCLI(t, "--dir", dir, "status", "--json")
	var got struct {
		Tokens struct {
			Input, Output int64
			CacheRead     int64 `json:"cache_read"`
		} `json:"tokens"`
		Plans []struct{ Sessions []string }
	}
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if got.Tokens.Input != 2700 || got.Tokens.Output != 100 || got.Tokens.CacheRead != 300 {
		t.Errorf("status tokens = %+v, want 2700 in, 100 out, 300 cache read (the plan's session and its delegation)", got.Tokens)
	}
	if len(got.Plans) != 1 || strings.Join(got.Plans[0].Sessions, ",") != id {
		t.Errorf("status plans = %+v, want the active plan naming its session", got.Plans)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSessionIDsComplete: weave sessions show and weave chat --resume
// complete session ids, the most recently active first.
func TestSessionIDsComplete(t *testing.T) {
	dir := project(t, nil)
	writeFile(t, filepath.Join(dir, ".weave", "sessions", "chat-old.jsonl"),
		`{"time":"2026-01-01T10:00:00Z","type":"message","agent":"loom","message":{"role":"user","content":"hi"}}`+"\n")
	writeFile(t, filepath.Join(dir, ".weave", "sessions", "chat-new.jsonl"),
		`{"time":"2026-01-02T10:00:00Z","type":"message","agent":"tapestry","message":{"role":"user","content":"hi"}}`+"\n")
	for _, args := range [][]string{{"sessions", "show", "chat-"}, {"chat", "--resume", "chat-"}} {
		code, out, errOut := runCLI(t, append([]string{"--dir", dir, "__complete"}, args...)...)
		if code != exitOK || !strings.HasPrefix(out, "chat-new\ttapestry\nchat-old\tloom\n") {
			t.Errorf("complete %v: exit %d, %q (%s); want the newest session first, with its agent", args, code, out, errOut)
		}
	}
}
