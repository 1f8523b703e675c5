package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runAgents runs `weave agents ARGS` in dir and returns its output.
func runAgents(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	trustInProcess(t)
	var out, errOut bytes.Buffer
	cmd := newCmdAgents(&globalOptions{Dir: dir}, &Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func withConfig(t *testing.T, yaml string) string {
	t.Helper()
	dir := project(t, nil)
	if err := os.WriteFile(filepath.Join(dir, ".weave", "config.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestAgentsListTable(t *testing.T) {
	dir := withConfig(t, `agents:
  thread:
    tools: [read, grep]
  weft:
    tools: [read, grep, write]
    allow_widen: true
    temperature: 0.05
delegation:
  max_depth: 2
`)
	out, err := runAgents(t, dir, "list")
	if err != nil {
		t.Fatalf("agents list: %v", err)
	}
	lines := strings.Split(out, "\n")
	rows := map[string][]string{}
	for _, l := range lines[1:9] {
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	if diff := cmp.Diff([]string{"AGENT", "MODE", "TEMP", "read", "write", "edit", "bash", "glob", "grep", "webfetch", "task", "todowrite", "plan_check", "skill", "DELEGATES"}, strings.Fields(lines[0])); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	tests := map[string][]string{
		"loom":     {"loom", "primary", "0.3", "v", "v", "v", "v", "v", "v", "v", "v", "v", "v", "v", "thread,spindle,pattern,weft,warp,shuttle"},
		"tapestry": {"tapestry", "primary", "0.2", "v", "v", "v", "v", "v", "v", "v", "x", "v", "v", "v", "-"},
		"pattern":  {"pattern", "subagent", "0.1", "v", ".md*", ".md*", "v", "v", "v", "v", "x", "v", "x", "v", "-"},
		"thread":   {"thread", "subagent", "0.1", "v", "x", "x", "x-", "x-", "v", "x-", "x", "x", "x", "x-", "-"},
		"weft":     {"weft", "subagent", "0.05", "v", "v+", "x", "x-", "x-", "v", "x-", "x", "x", "x", "x-", "-"},
		"warp":     {"warp", "subagent", "0.1", "v", "x", "x", "v", "v", "v", "v", "x", "x", "x", "v", "-"},
		"shuttle":  {"shuttle", "subagent", "0.3", "v", "v", "v", "v", "v", "v", "v", "v", "v", "v", "v", "-"},
	}
	for name, want := range tests {
		if diff := cmp.Diff(want, rows[name]); diff != "" {
			t.Errorf("row %s (-want +got):\n%s", name, diff)
		}
	}
	for _, s := range []string{
		"thread: narrowed by config (agents.thread.tools): without bash, glob, webfetch, skill",
		"weft: WIDENED by config (agents.weft.allow_widen): added write",
		"nests at most 2 deep",
		".md* only .md files under .weave/",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("agents list output lacks %q:\n%s", s, out)
		}
	}
}

func TestAgentsListJSON(t *testing.T) {
	dir := withConfig(t, "agents:\n  spindle:\n    tools: [read, webfetch]\n    model: small-model\n")
	out, err := runAgents(t, dir, "list", "--json")
	if err != nil {
		t.Fatalf("agents list --json: %v", err)
	}
	var got agentsList
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("agents list --json printed invalid JSON: %v\n%s", err, out)
	}
	if len(got.Agents) != 8 || got.MaxDepth != 3 || len(got.Tools) != 11 {
		t.Fatalf("agents list --json = %d agents, max_depth %d, %d tools; want 8, 3, 11", len(got.Agents), got.MaxDepth, len(got.Tools))
	}
	pattern := got.Agents[2]
	if pattern.Name != "pattern" || pattern.Matrix["write"] != cellScoped || pattern.Matrix["task"] != cellDenied || pattern.WriteScope != ".weave/**/*.md" {
		t.Errorf("pattern entry = %+v, want write scoped to .weave/**/*.md and task denied", pattern)
	}
	spindle := got.Agents[4]
	want := agentEntry{Name: "spindle", Title: "External Researcher", Mode: "subagent", Temperature: 0.2, Model: "small-model", Delegates: []string{},
		Matrix: map[string]string{"read": "allowed", "write": "denied", "edit": "denied", "bash": "denied", "glob": "denied", "grep": "denied",
			"webfetch": "allowed", "task": "denied", "todowrite": "denied", "plan_check": "denied", "skill": "denied"},
		Narrowed: []string{"bash", "glob", "grep", "skill"}}
	if diff := cmp.Diff(want, spindle); diff != "" {
		t.Errorf("spindle entry (-want +got):\n%s", diff)
	}
	if d := got.Agents[0].Delegates; len(d) != 6 {
		t.Errorf("loom delegates = %v, want six", d)
	}
}

func TestAgentsListRefusesSilentWidening(t *testing.T) {
	dir := withConfig(t, "agents:\n  warp:\n    tools: [read, edit]\n")
	_, err := runAgents(t, dir, "list")
	if err == nil || !strings.Contains(err.Error(), "agents.warp.tools: edit is outside warp's row") || !strings.Contains(err.Error(), "allow_widen: true") {
		t.Errorf("agents list with a widened row = %v, want the widening refused with advice", err)
	}
}

func TestAgentsListOutsideAProject(t *testing.T) {
	out, err := runAgents(t, t.TempDir(), "list")
	if err != nil || !strings.Contains(out, "loom") {
		t.Errorf("agents list outside a project = %v, %q; want the default matrix", err, out)
	}
	if _, err := runAgents(t, t.TempDir(), "list", "extra"); err == nil || exitCode(err) != exitUsage {
		t.Errorf("agents list extra = %v, want a usage error", err)
	}
}
