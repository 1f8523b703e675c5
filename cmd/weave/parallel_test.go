package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/host/model/modeltest"
)

// TestToolsMaxParallelThroughTheBinary runs weave chat -p where the model
// asks for 40 bash calls in one turn under tools.max_parallel 3. Each call
// marks itself running (a directory named by its id), counts the running
// ones, notes a count over 3, and waits until the test releases it. The
// test releases one call only once 3 run (fewer at the end, when fewer
// are left), so that the calls do run 3 at once, and checks at every step
// that no more than 3 do. Without the bound all 40 start before any is
// released. The model gets the 40 results in its order.
func TestToolsMaxParallelThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	const calls, limit = 40, 3
	bin := buildWeave(t)
	dir := project(t, nil)
	par := filepath.Join(dir, "par")
	for _, d := range []string{"running", "release"} {
		if err := os.MkdirAll(filepath.Join(par, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var tc []modeltest.ToolCall
	for i := range calls {
		id := fmt.Sprintf("c%02d", i)
		cmd := fmt.Sprintf(`mkdir par/running/%[1]s || exit 9; n=$(ls par/running | wc -l); if [ "$n" -gt %[2]d ]; then echo "%[1]s saw $n running" >> par/over; fi; `+
			`while [ ! -e par/release/%[1]s ] && [ ! -e par/release/all ]; do sleep 0.02; done; rmdir par/running/%[1]s; echo done %[1]s`, id, limit)
		b, _ := json.Marshal(map[string]string{"command": cmd})
		tc = append(tc, modeltest.ToolCall{ID: id, Name: "bash", Args: string(b)})
	}
	srv := modeltest.NewServer(t, modeltest.Turn{ToolCalls: tc}, modeltest.Turn{Text: "All forty ran."})
	env := append(chatEnv(t, srv), fmt.Sprintf("WEAVE_TOOLS_MAX_PARALLEL=%d", limit))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "chat", "-p", "run them")
	var out, errOut bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	// Whatever happens, the calls end and weave with them, before the
	// project goes.
	defer func() {
		_ = os.WriteFile(filepath.Join(par, "release", "all"), nil, 0o644)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			cancel()
			<-exited
		}
	}()

	running := func() []string {
		ents, err := os.ReadDir(filepath.Join(par, "running"))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range ents {
			ids = append(ids, e.Name())
		}
		return ids
	}
	// wait polls until cond holds, failing as soon as more than limit
	// calls run or weave exits first.
	wait := func(what string, cond func(ids []string) bool) []string {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			ids := running()
			if len(ids) > limit {
				t.Fatalf("%d bash calls ran at once (%v), want at most tools.max_parallel %d", len(ids), ids, limit)
			}
			if over, err := os.ReadFile(filepath.Join(par, "over")); err == nil {
				t.Fatalf("calls saw more than %d running: %s", limit, over)
			}
			if cond(ids) {
				return ids
			}
			select {
			case <-exited:
				t.Fatalf("weave exited (%v) while waiting for %s\nstdout: %s\nstderr: %s", waitErr, what, out.String(), errOut.String())
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("gave up waiting for %s; running %v", what, ids)
			}
		}
	}
	for released := 0; released < calls; released++ {
		want := min(limit, calls-released)
		ids := wait(fmt.Sprintf("%d calls to run", want), func(ids []string) bool { return len(ids) == want })
		id := ids[0]
		if err := os.WriteFile(filepath.Join(par, "release", id), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		wait(id+" to end", func(ids []string) bool { return !strings.Contains(strings.Join(ids, " "), id) })
	}
	select {
	case <-exited:
		if err := waitErr; err != nil || !strings.Contains(out.String(), "All forty ran.") {
			t.Fatalf("weave: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
		}
	case <-ctx.Done():
		t.Fatal("weave did not exit after every call ended")
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	var body struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := reqs[1].Decode(&body); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range body.Messages {
		if m.Role == "tool" {
			if !strings.Contains(m.Content, "done "+m.ToolCallID) {
				t.Errorf("result of %s = %q, want its output", m.ToolCallID, m.Content)
			}
			got = append(got, m.ToolCallID)
		}
	}
	var want []string
	for i := range calls {
		want = append(want, fmt.Sprintf("c%02d", i))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the model got results %v, want all %d in its order", got, calls)
	}
}
