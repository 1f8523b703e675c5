package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlanWarningsOncePerChange(t *testing.T) {
	dir := project(t, map[string]string{"bad": failPlan})
	count := func(s string) int { return strings.Count(s, "warning: .weave/plans/bad.md") }
	first := runBin(t, nil, "", "--dir", dir, "start-work", "bad")
	if first.code != exitFailed || count(first.err) == 0 {
		t.Fatalf("first run = %d, stderr %q; want 1 and the plan's warnings", first.code, first.err)
	}
	if again := runBin(t, nil, "", "--dir", dir, "start-work", "bad"); count(again.err) != 0 {
		t.Errorf("second run of the unchanged plan repeated its warnings:\n%s", again.err)
	}
	verbose := runBin(t, nil, "", "--dir", dir, "start-work", "--verbose", "bad")
	if count(verbose.err) != count(first.err) {
		t.Errorf("--verbose showed %d warnings, want the %d of the first run:\n%s", count(verbose.err), count(first.err), verbose.err)
	}
	// Warnings come in a stable order: by line, then text.
	if lines := warningLines(first.err); strings.Join(lines, "\n") != strings.Join(warningLines(verbose.err), "\n") {
		t.Errorf("warnings changed order between runs:\n%v\n%v", lines, warningLines(verbose.err))
	}
	// A change of the plan that changes its warnings shows them again.
	path := filepath.Join(dir, ".weave", "plans", "bad.md")
	if err := os.WriteFile(path, []byte(strings.Replace(failPlan, "# Fail\n", "# Fail\n\n## Context\n\nWhy.\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed := runBin(t, nil, "", "--dir", dir, "start-work", "bad"); count(changed.err) == 0 || count(changed.err) >= count(first.err) {
		t.Errorf("after the plan changed, warnings = %d, want fewer than %d but some:\n%s", count(changed.err), count(first.err), changed.err)
	}
}

func warningLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "warning: .weave/plans/") {
			out = append(out, l)
		}
	}
	return out
}

func TestUnknownWeaveVariableWarns(t *testing.T) {
	r := runBin(t, []string{"WEAVE_RUNBOK_RETRIES=3", "WEAVE_LOG_LEVEL=debug"}, "", "version")
	if r.code != 0 || !strings.Contains(r.err, "unknown environment variable WEAVE_RUNBOK_RETRIES (did you mean WEAVE_RUNBOOK_RETRIES?)") {
		t.Errorf("weave with WEAVE_RUNBOK_RETRIES = %d %q, want a did-you-mean warning", r.code, r.err)
	}
	if strings.Contains(r.err, "WEAVE_LOG_LEVEL") {
		t.Errorf("a known variable was warned about: %q", r.err)
	}
}
