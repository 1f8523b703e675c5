package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestJSONOnPlanAndConfigCommands(t *testing.T) {
	plan := "# P\n\n## TODOs\n\n- [ ] 1. Build\n  ```sh\n  true\n  ```\n- [ ] 2. Think hard\n  **What**: needs judgement.\n"
	dir := project(t, map[string]string{"p": plan})
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte("hook:\n  timeout: 3s\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var show planView
	runJSON(t, &show, "--dir", dir, "plan", "show", "p", "--json")
	if show.Name != "p" || len(show.Tasks) != 2 || show.Tasks[0].NeedsModel || !show.Tasks[1].NeedsModel || show.Tasks[0].Blocks[0].Kind != "runs" {
		t.Errorf("plan show --json = %+v, want two tasks, the second needing a model", show)
	}

	var val validationView
	r := runJSON(t, &val, "--dir", dir, "plan", "validate", "p", "--json")
	if r.code != 0 || !val.Valid || len(val.NeedsModel) != 1 || val.NeedsModel[0] != 2 {
		t.Errorf("plan validate --json = %d %+v, want valid and task 2 needing a model", r.code, val)
	}
	bad := project(t, map[string]string{"empty": "# Empty\n"})
	r = runJSON(t, &val, "--dir", bad, "plan", "validate", "empty", "--json")
	if r.code != exitFailed || val.Valid || len(val.Errors) == 0 {
		t.Errorf("plan validate --json on an invalid plan = %d %+v, want exit 1 and errors", r.code, val)
	}

	var cfg struct {
		Hook    map[string]any    `json:"hook"`
		Runbook map[string]any    `json:"runbook"`
		Sources map[string]string `json:"sources"`
	}
	runJSON(t, &cfg, "--dir", dir, "config", "show", "--json", "--sources")
	if cfg.Hook["timeout_ms"] != 3000.0 || cfg.Runbook["block_timeout_ms"] != 1800000.0 {
		t.Errorf("config show --json durations = %v %v, want hook.timeout_ms 3000 and runbook.block_timeout_ms 1800000", cfg.Hook, cfg.Runbook)
	}
	if !strings.HasPrefix(cfg.Sources["hook.timeout"], "project") || cfg.Sources["runbook.retries"] != "default" {
		t.Errorf("config show --json --sources = %v, want hook.timeout from the project and runbook.retries a default", cfg.Sources)
	}
}

// Durations are milliseconds in fields ending in _ms, in every command.
func TestJSONDurationsAreMilliseconds(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	r := runBin(t, nil, "", "--dir", dir, "start-work", "--json", "ok")
	if r.code != 0 {
		t.Fatalf("start-work --json = %d: %s", r.code, r.err)
	}
	done := 0
	for _, line := range strings.Split(strings.TrimSpace(r.out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if _, ok := ev["elapsed"]; ok {
			t.Errorf("event %s has elapsed in seconds", line)
		}
		if ev["type"] == "task.done" {
			done++
			ms, ok := ev["elapsed_ms"].(float64)
			if _, present := ev["elapsed_ms"]; present && (!ok || ms != float64(int64(ms))) {
				t.Errorf("task.done elapsed_ms = %v, want whole milliseconds", ev["elapsed_ms"])
			}
		}
	}
	if done != 2 {
		t.Errorf("start-work --json printed %d task.done events, want 2:\n%s", done, r.out)
	}

	var hooks []map[string]any
	runJSON(t, &hooks, "--dir", dir, "hooks", "list", "--json")
	if len(hooks) == 0 {
		t.Fatal("hooks list --json printed no hooks")
	}
	for _, h := range hooks {
		if _, ok := h["timeout"]; ok || h["timeout_ms"] != 10000.0 {
			t.Errorf("hooks list --json row %v, want timeout_ms 10000 and no timeout", h)
		}
	}
}

// Every event type a run can print is in docs/commands.md.
func TestDocsListEveryEventType(t *testing.T) {
	root := repoRoot(t)
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "host", "run", "events.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "docs", "commands.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Event") || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		typ, _ := strconv.Unquote(lit.Value)
		n++
		if !strings.Contains(string(readme), "| `"+typ+"` |") {
			t.Errorf("docs/commands.md's table of start-work --json events lacks %q (%s)", typ, vs.Names[0].Name)
		}
		return true
	})
	if n < 9 {
		t.Errorf("found %d event types in host/run/events.go, want at least 9", n)
	}
}

func TestStatusWatchJSONIsOneObjectPerLine(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	out := &notifyBuffer{wrote: make(chan struct{}, 64)}
	stop := startWatch(t, out, "--dir", dir, "status", "--watch", "--json")
	out.waitFor(t, "\n")
	if err := os.WriteFile(filepath.Join(dir, ".weave", "plans", "two.md"), []byte(okPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, `"name":"two"`)
	stop()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("status --watch --json printed %d lines, want one per change:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		var st map[string]any
		if err := json.Unmarshal([]byte(l), &st); err != nil || st["plans"] == nil {
			t.Errorf("line %q is not one status object: %v", l, err)
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// --jq filters a command's --json output, one document or a stream of
// events, and refuses commands that print no JSON.
func TestJQFiltersJSONOutput(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan, "bad": failPlan})
	// Plans are listed newest first, by name among equals: the two are
	// given one time, which two writes in a row may not share.
	then := time.Now().Add(-time.Minute)
	for _, name := range []string{"ok", "bad"} {
		if err := os.Chtimes(filepath.Join(dir, ".weave", "plans", name+".md"), then, then); err != nil {
			t.Fatal(err)
		}
	}
	r := runBin(t, nil, "", "--dir", dir, "plan", "list", "--jq", ".[].name")
	if r.code != exitOK || r.out != "bad\nok\n" {
		t.Errorf("plan list --jq '.[].name' = %d %q (err %q), want the names, raw, one per line", r.code, r.out, r.err)
	}
	r = runBin(t, nil, "", "--dir", dir, "start-work", "ok", "--jq", `select(.type == "task.done") | {task}`)
	if r.code != exitOK || r.out != "{\"task\":1}\n{\"task\":2}\n" {
		t.Errorf("start-work --jq over the event stream = %d %q (err %q), want one compact object per finished task", r.code, r.out, r.err)
	}
	r = runBin(t, nil, "", "--dir", dir, "init", "--jq", ".")
	if r.code != exitUsage || !strings.Contains(r.err, "has no --json") {
		t.Errorf("init --jq = %d %q, want a usage error: init prints no JSON", r.code, r.err)
	}
	r = runBin(t, nil, "", "--dir", dir, "plan", "list", "--jq", ".[")
	if r.code != exitUsage || !strings.Contains(r.err, "--jq") {
		t.Errorf("a broken expression = %d %q, want a usage error naming --jq", r.code, r.err)
	}
	r = runBin(t, nil, "", "--dir", dir, "plan", "list", "--jq", ".[] | .name + 1")
	if r.code != exitFailed || !strings.Contains(r.err, "--jq") {
		t.Errorf("an expression failing on the data = %d %q, want exit 1 naming --jq", r.code, r.err)
	}
}
