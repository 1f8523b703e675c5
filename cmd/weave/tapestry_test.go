package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
	"github.com/weavehq/weave/plans"
)

// These tests run `weave start-work` as a process against the fake model
// server: Tapestry's model does prose tasks with its tools, verify blocks
// gate its ticks, an idle model is nudged on, and the Verification
// checklist is the plan's final gate.

const prosePlan = `# Greeting

## TODOs

- [ ] 1. Write the greeting
  **What**: Create greeting.txt saying hello.
  **Acceptance**: greeting.txt says hello.
`

func tool(name, args string) modeltest.Turn {
	return modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: name, Args: args}}}
}

// chatBody is the part of an OpenAI request the tests read.
type chatBody struct {
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct{ Name string } `json:"function"`
	} `json:"tools"`
}

func decodeChat(t *testing.T, r modeltest.Request) chatBody {
	t.Helper()
	var b chatBody
	if err := r.Decode(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// text is a message's content as text, whether a string or parts.
func text(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				s, _ := m["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// lastOf is the text of the last message of role in b.
func (b chatBody) lastOf(role string) string {
	for i := len(b.Messages) - 1; i >= 0; i-- {
		if b.Messages[i].Role == role {
			return text(b.Messages[i].Content)
		}
	}
	return ""
}

func (b chatBody) has(role, piece string) bool {
	for _, m := range b.Messages {
		if m.Role == role && strings.Contains(text(m.Content), piece) {
			return true
		}
	}
	return false
}

func stateOf(t *testing.T, dir string) *plans.State {
	t.Helper()
	st, _, err := plans.ProjectStore(dir).Read()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStartWorkProseTask(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"greeting": prosePlan})
	srv := modeltest.NewServer(t,
		modeltest.Turn{Text: "Writing the file.", ToolCalls: []modeltest.ToolCall{{Name: "write", Args: `{"path":"greeting.txt","content":"hello\n"}`}}},
		tool("bash", `{"command":"grep -q hello greeting.txt && echo greeting-ok"}`),
		tool("plan_check", `{"task":1}`),
		modeltest.Turn{Text: "Task 1 is done: greeting.txt says hello."},
	)
	code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "greeting", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := readFile(t, filepath.Join(dir, "greeting.txt")); got != "hello\n" {
		t.Errorf("greeting.txt = %q, want the model's write", got)
	}
	if plan := readFile(t, filepath.Join(dir, ".weave", "plans", "greeting.md")); !strings.Contains(plan, "- [x] 1. Write the greeting") {
		t.Errorf("plan = %s, want task 1 ticked", plan)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Type, Output string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		types = append(types, ev.Type)
	}
	joined := strings.Join(types, " ")
	if !strings.Contains(joined, "model.delta") || !strings.Contains(joined, "task.done") || !strings.HasSuffix(joined, "plan.done") {
		t.Errorf("--json events = %s, want the model's text streamed as model.delta, then task.done and plan.done", joined)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	first := decodeChat(t, reqs[0])
	if p := first.lastOf("user"); !strings.Contains(p, "Carry out task 1 (Write the greeting)") || !strings.Contains(p, "**Acceptance**: greeting.txt says hello.") {
		t.Errorf("task prompt = %q, want the task and its Acceptance", p)
	}
	if !first.has("system", "You are Tapestry") {
		t.Error("the first request has no Tapestry system prompt")
	}
	var offered []string
	for _, tl := range first.Tools {
		offered = append(offered, tl.Function.Name)
	}
	if o := strings.Join(offered, ","); !strings.Contains(o, "plan_check") || strings.Contains(o, "task,") || strings.HasSuffix(o, ",task") {
		t.Errorf("tapestry was offered %s, want its row: plan_check, no task", o)
	}
	if res := decodeChat(t, reqs[2]).lastOf("tool"); !strings.Contains(res, "greeting-ok") {
		t.Errorf("the check's result = %q, want its output", res)
	}
	if res := decodeChat(t, reqs[3]).lastOf("tool"); !strings.Contains(res, "ticked task 1") {
		t.Errorf("the tick's result = %q, want the tick confirmed", res)
	}
	if _, err := os.Stat(filepath.Join(dir, ".weave", "state.json")); err == nil {
		t.Error("state.json left behind by a finished plan")
	}
}

func TestStartWorkVerifyBlockGatesTheTick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"marker": "# Marker\n\n## TODOs\n\n- [ ] 1. Make the marker\n  **What**: marker.txt says done.\n  **Acceptance**: the verify block passes.\n  ```sh verify\n  grep -q done marker.txt\n  ```\n"})
	srv := modeltest.NewServer(t,
		tool("write", `{"path":"marker.txt","content":"not yet\n"}`),
		tool("plan_check", `{"task":1}`),
		tool("write", `{"path":"marker.txt","content":"done\n"}`),
		tool("plan_check", `{"task":1}`),
		modeltest.Turn{Text: "Ticked after fixing the marker."},
	)
	code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "marker")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	refused := decodeChat(t, reqs[2]).lastOf("tool")
	if !strings.Contains(refused, "The tick was refused") || !strings.Contains(refused, "grep -q done marker.txt") || !strings.Contains(refused, "exit code 1") {
		t.Errorf("first tick's result = %q, want a refusal naming the verify block and its exit code", refused)
	}
	if res := decodeChat(t, reqs[4]).lastOf("tool"); !strings.Contains(res, "ticked task 1") {
		t.Errorf("second tick's result = %q, want the tick", res)
	}
	if plan := readFile(t, filepath.Join(dir, ".weave", "plans", "marker.md")); !strings.Contains(plan, "- [x] 1.") {
		t.Errorf("plan = %s, want task 1 ticked", plan)
	}
}

func TestStartWorkIdleContinuation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("stops early twice, then finishes in the same conversation", func(t *testing.T) {
		dir := project(t, map[string]string{"greeting": prosePlan})
		srv := modeltest.NewServer(t,
			modeltest.Turn{Text: "I will look at this later."},
			modeltest.Turn{Text: "Still thinking about it."},
			tool("write", `{"path":"greeting.txt","content":"hello\n"}`),
			tool("plan_check", `{"task":1}`),
			modeltest.Turn{Text: "Done."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "greeting")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		reqs := srv.Requests()
		if len(reqs) != 5 {
			t.Fatalf("%d model requests, want 5", len(reqs))
		}
		for i, want := range map[int]string{1: "I will look at this later.", 2: "Still thinking about it."} {
			b := decodeChat(t, reqs[i])
			if nudge := b.lastOf("user"); !strings.Contains(nudge, "Active work: greeting, 0/1 tasks done") || !strings.Contains(nudge, "1. Write the greeting") {
				t.Errorf("request %d: user message = %q, want the continuation prompt", i+1, nudge)
			}
			if !b.has("assistant", want) || !b.has("user", "Carry out task 1") {
				t.Errorf("request %d does not continue the conversation (no %q, or no task prompt)", i+1, want)
			}
		}
		if plan := readFile(t, filepath.Join(dir, ".weave", "plans", "greeting.md")); !strings.Contains(plan, "- [x] 1.") {
			t.Errorf("plan = %s, want task 1 ticked", plan)
		}
	})

	t.Run("three nudges without progress pause the plan", func(t *testing.T) {
		dir := project(t, map[string]string{"greeting": prosePlan})
		srv := modeltest.NewServer(t,
			modeltest.Turn{Text: "No."}, modeltest.Turn{Text: "No."}, modeltest.Turn{Text: "No."}, modeltest.Turn{Text: "No."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "greeting")
		if code != exitPaused {
			t.Fatalf("exit %d, want %d (paused)\nstdout: %s\nstderr: %s", code, exitPaused, out, errOut)
		}
		if !strings.Contains(out, "3 continuation prompts without progress") || !strings.Contains(errOut, "weave start-work") {
			t.Errorf("stdout %q / stderr %q: want the reason and how to resume", out, errOut)
		}
		if n := len(srv.Requests()); n != 4 {
			t.Errorf("%d model requests, want 4 (the task, three nudges)", n)
		}
		st := stateOf(t, dir)
		if st == nil || !st.Paused || st.Continuation == nil || st.Continuation.Nudges != 3 || st.Continuation.Stopped == "" {
			t.Fatalf("state = %+v, want paused with 3 nudges and continuation stopped", st)
		}
		// The next start-work re-arms continuation and resumes at task 1.
		srv2 := modeltest.NewServer(t,
			tool("write", `{"path":"greeting.txt","content":"hello\n"}`),
			tool("plan_check", `{"task":1}`),
			modeltest.Turn{Text: "Done."},
		)
		code, out, errOut = runWeave(t, bin, dir, chatEnv(t, srv2), "start-work")
		if code != 0 {
			t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if !strings.Contains(out, "resuming plan greeting (0/1 done)") {
			t.Errorf("resume stdout = %q, want it to resume the plan", out)
		}
	})

	t.Run("the count survives a restart", func(t *testing.T) {
		dir := project(t, map[string]string{"greeting": prosePlan})
		srv := modeltest.NewServer(t,
			modeltest.Turn{Text: "Later."}, modeltest.Turn{Text: "Later."},
			modeltest.Turn{Status: 400, Error: "the fake model refuses"},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "greeting", "--retries", "0")
		if code != exitFailed {
			t.Fatalf("exit %d, want %d (failed)\nstdout: %s\nstderr: %s", code, exitFailed, out, errOut)
		}
		st := stateOf(t, dir)
		if st == nil || st.Continuation == nil || st.Continuation.Nudges != 2 || st.Continuation.Stopped != "" {
			t.Fatalf("state after the first run = %+v, want 2 nudges recorded", st)
		}
		// One more nudge is left: the next run's model idles twice and the
		// plan pauses, instead of three nudges afresh.
		srv2 := modeltest.NewServer(t, modeltest.Turn{Text: "Later."}, modeltest.Turn{Text: "Later."}, modeltest.Turn{Text: "Later."})
		code, out, errOut = runWeave(t, bin, dir, chatEnv(t, srv2), "start-work")
		if code != exitPaused {
			t.Fatalf("second run: exit %d, want %d\nstdout: %s\nstderr: %s", code, exitPaused, out, errOut)
		}
		reqs := srv2.Requests()
		if len(reqs) != 2 {
			t.Fatalf("second run: %d model requests, want 2 (the task, the third nudge)", len(reqs))
		}
		// The resumed run continues the session's conversation.
		if b := decodeChat(t, reqs[0]); !b.has("assistant", "Later.") || !b.has("user", "Active work: greeting") {
			t.Error("the resumed run's first request does not carry the earlier conversation")
		}
		if st := stateOf(t, dir); st == nil || st.Continuation == nil || st.Continuation.Nudges != 3 {
			t.Errorf("state after the second run = %+v, want 3 nudges", st)
		}
	})
}

const gatedPlan = `# Gated

## TODOs

- [ ] 1. Build
  **What**: Write out.txt.
  **Acceptance**: out.txt exists.
  ` + "```sh" + `
  echo built > out.txt
  ` + "```" + `

## Verification

- [ ] The release note exists
  ` + "```sh verify" + `
  test -f NOTES.md
  ` + "```" + `
`

func TestStartWorkVerificationGate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	dir := project(t, map[string]string{"gated": gatedPlan})
	r := runBinIn(t, dir, "start-work", "gated", "--retries", "0")
	if r.code != exitFailed || !strings.Contains(r.err, "The release note exists") {
		t.Fatalf("exit %d, stderr %q: want the run to fail on the Verification item", r.code, r.err)
	}
	if !strings.Contains(r.out, "task 1 done") {
		t.Errorf("stdout = %q, want task 1 done before the gate", r.out)
	}
	st := runBinIn(t, dir, "status", "--json")
	var status struct {
		Plans []struct {
			Name             string
			Completed, Total int
			Complete         bool
		}
	}
	if err := json.Unmarshal([]byte(st.out), &status); err != nil {
		t.Fatalf("status --json: %v\n%s", err, st.out)
	}
	if len(status.Plans) != 1 || status.Plans[0].Completed != 1 || status.Plans[0].Total != 2 || status.Plans[0].Complete {
		t.Errorf("status --json = %s, want 1 of 2 done: the Verification item counts", st.out)
	}
	list := runBinIn(t, dir, "plan", "list")
	if !strings.Contains(list.out, "1/2") && !strings.Contains(list.out, "1\t2") {
		t.Errorf("plan list = %q, want gated at 1 of 2", list.out)
	}
	if err := os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runBinIn(t, dir, "start-work")
	if r.code != 0 || !strings.Contains(r.out, "plan gated done: 2/2") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want the plan done once the gate passes", r.code, r.out, r.err)
	}
}

func TestStartWorkProseTaskWithoutModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	dir := project(t, map[string]string{"greeting": prosePlan})
	r := runBinIn(t, dir, "start-work", "greeting")
	if r.code != exitFailed {
		t.Fatalf("exit %d, want %d\nstderr: %s", r.code, exitFailed, r.err)
	}
	for _, want := range []string{"model.provider", "model.name", "weave task done greeting 1"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("stderr = %q, want it to say %q", r.err, want)
		}
	}
}

// The quickstart's runbook run shows people's messages only: nothing that
// was written to steer a model.
func TestQuickstartPrintsNoModelText(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-R", filepath.Join("..", "..", "examples", "quickstart")+"/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the quickstart: %v %s", err, out)
	}
	r := runBinIn(t, dir, "start-work", "first-steps")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err)
	}
	if !strings.Contains(r.out, "plan first-steps done: 6/6") || !strings.Contains(r.out, "task 5 (verification): `build/` holds") {
		t.Errorf("stdout = %q, want the plan done with its Verification checklist", r.out)
	}
	for _, model := range []string{"note:", "Before reporting", "system-reminder", "Verification section"} {
		if strings.Contains(r.out+r.err, model) {
			t.Errorf("output holds %q, text for a model:\n%s%s", model, r.out, r.err)
		}
	}
}

// TestStartWorkCompactsMidTask: a prose task whose conversation reaches the
// compact ratio is compacted in the middle of the task; the model carries on
// from the summary and the plan's state, and the task is done.
func TestStartWorkCompactsMidTask(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"greeting": prosePlan})
	srv := modeltest.NewServer(t,
		// 1950 of a 2000-token window: past the compact ratio.
		modeltest.Turn{Text: "Writing the file.", ToolCalls: []modeltest.ToolCall{{Name: "write", Args: `{"path":"greeting.txt","content":"hello\n"}`}},
			Usage: &modeltest.Usage{Input: 1900, Output: 50}},
		modeltest.Turn{Text: "SUMMARY: writing greeting.txt for task 1; written, not yet ticked."},
		tool("plan_check", `{"task":1}`),
		modeltest.Turn{Text: "Task 1 is done."},
	)
	env := append(chatEnv(t, srv), "WEAVE_MODEL_CONTEXT_WINDOW=2000")
	code, out, errOut := runWeave(t, bin, dir, env, "start-work", "greeting", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out, `"type":"model.compacted"`) {
		t.Errorf("--json has no model.compacted event:\n%s", out)
	}
	if plan := readFile(t, filepath.Join(dir, ".weave", "plans", "greeting.md")); !strings.Contains(plan, "- [x] 1. Write the greeting") {
		t.Errorf("plan = %s, want task 1 ticked after the compaction", plan)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4: the task, the summary, the tick, the report", len(reqs))
	}
	// The call after the compaction starts from the summary, which carries
	// the plan's state, and keeps the write call and its result.
	after := decodeChat(t, reqs[2])
	var first string
	for _, m := range after.Messages {
		if m.Role == "user" {
			first = text(m.Content)
			break
		}
	}
	if !strings.Contains(first, "SUMMARY: writing greeting.txt") || !strings.Contains(first, "0 of 1") {
		t.Errorf("the first user message after the compaction = %q, want the summary and the plan's state", first)
	}
	if strings.Contains(strings.Join(func() []string {
		var all []string
		for _, m := range after.Messages {
			all = append(all, text(m.Content))
		}
		return all
	}(), "\n"), "Carry out task 1 (Write the greeting)") {
		t.Error("the task prompt was sent again after the compaction; the summary should replace it")
	}
	if !after.has("tool", "greeting.txt") {
		t.Error("the write's result is missing after the compaction")
	}
}

func TestTapestryPluginKilledMidTaskIsRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, map[string]string{"greeting": prosePlan})
	// The model's first call runs in the host (the bash tool), whose child
	// the Tapestry plugin is: it kills that plugin while the plugin waits
	// for the call's result. The bracket keeps the shell's own command
	// line from matching the pattern.
	kill := `pkill -KILL -P $PPID -f "__plugin weave[.]agent[.]tapestry"; echo killed`
	// The sandbox would hide the plugin from the model's bash: the test
	// runs it outside, as on a machine without one.
	writeConfig(t, dir, "sandbox:\n  mode: off\n")
	srv := modeltest.NewServer(t,
		tool("bash", `{"command":`+strconvQuote(kill)+`}`),
		tool("plan_check", `{"task":1}`),
		modeltest.Turn{Text: "Task 1 is done."},
	)
	code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "greeting", "--json")
	if code != 0 {
		t.Fatalf("exit %d, want 0 after a restart\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var failed, done int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Type, Error string
			Retry       bool
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case "task.failed":
			failed++
			if !ev.Retry || !strings.Contains(ev.Error, "tapestry") {
				t.Errorf("task.failed = %+v, want a retried failure naming the plugin", ev)
			}
		case "task.done":
			done++
		}
	}
	if failed != 1 || done != 1 {
		t.Errorf("failed %d, done %d; want one failure (the killed plugin), then the task done by the restarted one\n%s", failed, done, out)
	}
}
