package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/model/modeltest"
)

// writeCall is a scripted write tool call.
func writeCall(t *testing.T, path, content string) modeltest.ToolCall {
	t.Helper()
	b, err := json.Marshal(map[string]string{"path": path, "content": content})
	if err != nil {
		t.Fatal(err)
	}
	return modeltest.ToolCall{Name: "write", Args: string(b)}
}

// modelRequest is the part of an OpenAI chat request these tests read,
// with string contents.
type modelRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct{ Name string } `json:"function"`
	} `json:"tools"`
}

func decodeBody(t *testing.T, r modeltest.Request) modelRequest {
	t.Helper()
	var b modelRequest
	if err := r.Decode(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

const healthzPlan = `# Health endpoint

## TL;DR
Add /healthz answering 200, with a test.

**Estimated Effort**: %s

## Context
The server has no health endpoint.

## Objectives
- GET /healthz answers 200.

## TODOs

- [ ] 1. Add the handler
  **What**: a handler that answers 200 ok.
  **Files**: ` + "`healthz.go`" + ` (new)
  **Acceptance**: the handler answers 200.
  ` + "```sh verify\n  test -f healthz.go\n  ```" + `
%s`

const healthzVerification = `
## Verification

- [ ] The file is there.
  ` + "```sh verify\n  test -f healthz.go\n  ```" + `
`

// TestPlanNewThroughTheBinary runs weave plan new against the fake model:
// Pattern's first plan fails validation, the validator's findings reach the
// model as a message, the fixed plan passes plan validate with no warning,
// and a write outside .weave/ is refused with the refusal in the model's
// next request.
func TestPlanNewThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("invalid first, fixed after the message", func(t *testing.T) {
		dir := project(t, nil)
		bad := strings.Replace(healthzPlan, "%s", "Huge", 1)
		bad = strings.Replace(bad, "%s", "", 1)
		good := strings.Replace(healthzPlan, "%s", "Small", 1)
		good = strings.Replace(good, "%s", healthzVerification, 1)
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{
				writeCall(t, "healthz.go", "package main\n"),
				writeCall(t, ".weave/plans/healthz.md", bad),
			}},
			modeltest.Turn{Text: "Wrote .weave/plans/healthz.md."},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{writeCall(t, ".weave/plans/healthz.md", good)}},
			modeltest.Turn{Text: "Fixed .weave/plans/healthz.md."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "plan", "new", "add a /healthz endpoint")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if want := ".weave/plans/healthz.md: \"Health endpoint\", 2 tasks, effort Small\n"; out != want {
			t.Errorf("stdout = %q, want %q", out, want)
		}
		if !strings.Contains(errOut, "[pattern] → write") {
			t.Errorf("stderr = %q, want Pattern's tool calls", errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "healthz.go")); err == nil {
			t.Error("pattern wrote healthz.go outside .weave/")
		}
		reqs := srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d model requests, want 4", len(reqs))
		}
		// The refusal reaches the model as the result of its call.
		second := decodeBody(t, reqs[1])
		var results []string
		for _, m := range second.Messages {
			if m.Role == "tool" {
				results = append(results, m.Content)
			}
		}
		if len(results) != 2 || !strings.HasPrefix(results[0], "denied by the capability matrix (pattern may only write") || !strings.Contains(results[0], ".weave") {
			t.Errorf("tool results = %q, want the write outside .weave/ refused, saying where Pattern may write", results)
		}
		// The validator's findings reach the model as the next user message.
		third := decodeBody(t, reqs[2])
		last := third.Messages[len(third.Messages)-1]
		if last.Role != "user" || !strings.Contains(last.Content, "does not pass") ||
			!strings.Contains(last.Content, `unknown **Estimated Effort** "Huge"`) || !strings.Contains(last.Content, "no ## Verification section") {
			t.Errorf("message after the first plan = %+v, want the validator's findings", last)
		}
		code, out, errOut = runWeave(t, bin, dir, cleanEnv(t), "plan", "validate", "healthz")
		if code != 0 || !strings.Contains(out, "is valid (0 warning(s))") {
			t.Errorf("plan validate: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})

	t.Run("delegated by loom, the check holds too", func(t *testing.T) {
		dir := project(t, nil)
		bad := strings.Replace(strings.Replace(healthzPlan, "%s", "Medium", 1), "%s", "", 1)
		good := strings.Replace(strings.Replace(healthzPlan, "%s", "Medium", 1), "%s", healthzVerification, 1)
		srv := modeltest.NewServer(t,
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "task", Args: `{"agent":"pattern","prompt":"plan a /healthz endpoint"}`}}},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{writeCall(t, ".weave/plans/healthz.md", bad)}},
			modeltest.Turn{Text: "Wrote it."},
			modeltest.Turn{ToolCalls: []modeltest.ToolCall{writeCall(t, ".weave/plans/healthz.md", good)}},
			modeltest.Turn{Text: "Fixed it."},
			modeltest.Turn{Text: "The plan is ready: weave start-work healthz."},
		)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "chat", "-p", "plan a /healthz endpoint")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		reqs := srv.Requests()
		if len(reqs) != 6 {
			t.Fatalf("%d model requests, want 6", len(reqs))
		}
		fix := decodeBody(t, reqs[3])
		if last := fix.Messages[len(fix.Messages)-1]; last.Role != "user" || !strings.Contains(last.Content, "no ## Verification section") {
			t.Errorf("pattern's message after the first plan = %+v, want the validator's findings", last)
		}
		loom := decodeBody(t, reqs[5])
		if last := loom.Messages[len(loom.Messages)-1]; last.Role != "tool" || !strings.Contains(last.Content, "Weave validated .weave/plans/healthz.md") {
			t.Errorf("pattern's answer to loom = %+v, want it to say where the validated plan is", last)
		}
	})

	t.Run("still invalid after the fixes", func(t *testing.T) {
		dir := project(t, nil)
		bad := strings.Replace(strings.Replace(healthzPlan, "%s", "Huge", 1), "%s", "", 1)
		var turns []modeltest.Turn
		for range 4 {
			turns = append(turns,
				modeltest.Turn{ToolCalls: []modeltest.ToolCall{writeCall(t, ".weave/plans/healthz.md", bad+"\n")}},
				modeltest.Turn{Text: "Done."})
			bad += "\n"
		}
		srv := modeltest.NewServer(t, turns...)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "plan", "new", "add a /healthz endpoint")
		if code != 1 || !strings.Contains(errOut, "still does not pass validation after 3 attempts") ||
			!strings.Contains(errOut, "weave plan validate healthz") {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s\nwant 1 and a message that says so", code, out, errOut)
		}
		if n := len(srv.Requests()); n != 8 {
			t.Errorf("%d model requests, want 8 (the first answer and three fixes)", n)
		}
	})

	t.Run("no model configured", func(t *testing.T) {
		code, _, errOut := runWeave(t, bin, project(t, nil), cleanEnv(t), "plan", "new", "anything")
		if code != 1 || !strings.Contains(errOut, "needs a model") || !strings.Contains(errOut, "model.provider") {
			t.Errorf("exit %d, stderr %q; want 1 and the config key to set", code, errOut)
		}
	})
}
