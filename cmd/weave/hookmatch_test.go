package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

// A hook plugin that declares the tools it handles is called for those and
// never for the others, and the built-in hooks that care only about file
// tools (or, as the context-window monitor, only about model answers) are
// not even started by a runbook of shell blocks.
func TestHookCalledOnlyForDeclaredTools(t *testing.T) {
	dir := project(t, map[string]string{"ok": okPlan})
	buildGo(t, "./cmd/weave/testdata/recordhook", filepath.Join(dir, ".weave", "plugins", "recordhook"))
	record := filepath.Join(t.TempDir(), "calls")
	t.Setenv("WEAVE_RECORD_FILE", record)

	code, out, errOut := runCLI(t, "--dir", dir, "start-work", "ok")
	if code != exitOK {
		t.Fatalf("start-work = %d; out %q err %q", code, out, errOut)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("the hook was never called: %v", err)
	}
	calls := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, c := range calls {
		if strings.HasPrefix(c, plugins.EventToolExecuteBefore+" ") {
			t.Errorf("the hook was called on %q, but it handles tool.execute.before for write only", c)
		}
	}
	// tool.execute.after is not narrowed: it sees every call of the run.
	for _, want := range []string{plugins.EventToolExecuteAfter + " " + plugins.ToolBash, plugins.EventToolExecuteAfter + " " + plugins.ToolPlanCheck} {
		if !slices.Contains(calls, want) {
			t.Errorf("calls = %q, want %q among them", calls, want)
		}
	}

	log, err := os.ReadFile(filepath.Join(dir, ".weave", "logs", "weave.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{hooks.WriteGuardID, hooks.PatternMDOnlyID, hooks.RulesInjectorID, hooks.ContextWindowMonitorID} {
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, "plugin started") && strings.Contains(line, id) {
				t.Errorf("%s was started for a run of shell blocks: %s", id, line)
			}
		}
	}
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "plugin started") && strings.Contains(line, "recordhook") {
			return
		}
	}
	t.Errorf("the log does not say recordhook started, so it cannot tell which plugins ran:\n%s", log)
}
