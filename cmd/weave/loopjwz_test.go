package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/bus/jwz/jwztest"
	"github.com/weavehq/weave/bus/loop"
)

// With loop.jwz on (or --jwz), start-work appends its loop events to the project's
// jwz store: a failed task leaves a resumable ABORT, the resumed run a
// DONE, each a whole record idle's TUI reads. A model-written garbage
// line already in the log does not make Weave's records unreadable.
func TestStartWorkWritesLoopEventsToJWZ(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	plan := "# P\n\n## TODOs\n\n- [ ] 1. Greet\n  ```sh\n  echo hi\n  ```\n- [ ] 2. Check\n  ```sh\n  test -f ok\n  ```\n"
	dir := project(t, map[string]string{"p": plan})
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte("loop:\n  jwz: true\nrunbook:\n  retries: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, ".jwz")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "p")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFailed, out, errOut)
	}
	// Someone's torn line at the end of the log.
	f, err := os.OpenFile(filepath.Join(store, "messages.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("no jwz log after a run with loop.jwz: %v", err)
	}
	f.WriteString(`{"type":"message","id":"01`)
	f.Close()
	logData, _ := os.ReadFile(filepath.Join(store, "messages.jsonl"))
	torn := strings.TrimSuffix(string(logData), `{"type":"message","id":"01`)
	if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The resumed run has the flag in place of the key.
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte("runbook:\n  retries: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runWeave(t, bin, dir, env, "start-work", "p", "--jwz")
	if code != 0 {
		t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// The torn line stays where it was (append-only); drop it to read the
	// rest as jwz would skip it.
	logData, _ = os.ReadFile(filepath.Join(store, "messages.jsonl"))
	rest := strings.TrimPrefix(string(logData), torn+`{"type":"message","id":"01`+"\n")
	if len(rest) == len(logData) {
		t.Fatalf("the log was rewritten or the torn line not ended:\n%s", logData)
	}
	if err := os.WriteFile(filepath.Join(store, "messages.jsonl"), []byte(torn+rest), 0o644); err != nil {
		t.Fatal(err)
	}
	got := jwztest.ReadStore(t, store)
	var kinds []string
	var paused bool
	for _, m := range got[loop.TopicCurrent] {
		st, ok := jwztest.IdleParse(m.Body)
		if !ok {
			t.Fatalf("idle cannot parse %s", m.Body)
		}
		kinds = append(kinds, st.Event)
		e, err := loop.Decode([]byte(m.Body))
		if err != nil {
			t.Fatalf("loop.Decode(%s) = %v", m.Body, err)
		}
		if e.Kind == loop.KindAbort {
			paused = e.Resumable
		}
		if st.Event == "STATE" && (len(st.Stack) != 1 || st.Stack[0].Max != 2 || !strings.HasSuffix(st.Stack[0].PromptFile, "p.md")) {
			t.Errorf("STATE as idle reads it = %+v", st)
		}
	}
	joined := strings.Join(kinds, " ")
	if !strings.Contains(joined, "STATE ABORT STATE") || !strings.HasSuffix(joined, "DONE") {
		t.Errorf("loop:current events = %s, want STATEs, a pause, STATEs, DONE", joined)
	}
	if !paused {
		t.Errorf("the failed run's ABORT is not resumable")
	}
	if len(got[loop.TopicAnchor]) != 2 {
		t.Errorf("loop:anchor has %d messages, want 2", len(got[loop.TopicAnchor]))
	}
}
