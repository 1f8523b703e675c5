package plans

import (
	"strings"
	"testing"
)

const gatePlan = `# Gate

## TL;DR

**Estimated Effort**: Quick

## Context

## Objectives

### Definition of Done

- [ ] descriptive, never counted

## Verification

- [ ] Tests pass
  ` + "```sh verify" + `
  true
  ` + "```" + `
- [ ] The docs read well

## TODOs

- [ ] 1. Build
  **What**: w
  **Acceptance**: a
  ` + "```sh" + `
  true
  ` + "```" + `
- [ ] 2. Think
  **What**: w
  **Acceptance**: a
`

func TestVerificationChecklistIsTheFinalGate(t *testing.T) {
	p := Parse([]byte(gatePlan))
	var titles []string
	for _, tk := range p.Tasks {
		titles = append(titles, tk.Title)
	}
	if got := strings.Join(titles, "|"); got != "Tests pass|The docs read well|Build|Think" {
		t.Fatalf("tasks = %s, want the Verification items and the TODOs, not Definition of Done", got)
	}
	if pr := p.Progress(); pr.Total != 4 || pr.Completed != 0 {
		t.Errorf("progress = %+v, want 0/4", pr)
	}
	// The TODOs come first, wherever the checklist is in the file.
	var order []string
	skip := map[string]bool{}
	for {
		tk, ok := p.NextExcept(func(t Task) bool { return skip[t.Title] })
		if !ok {
			break
		}
		order = append(order, tk.Title)
		skip[tk.Title] = true
	}
	if got := strings.Join(order, "|"); got != "Build|Think|Tests pass|The docs read well" {
		t.Errorf("run order = %s, want the TODOs, then the Verification items", got)
	}
	if tk, _ := p.Next(); tk.Title != "Build" {
		t.Errorf("Next = %q, want the first TODO", tk.Title)
	}
	r := Validate("", p)
	for _, w := range r.Warnings {
		if strings.Contains(w.Msg, "Tests pass") || strings.Contains(w.Msg, "docs read well") {
			t.Errorf("warning %q: a Verification item needs no What or Acceptance", w.Msg)
		}
	}
	work := map[string]bool{}
	for _, tk := range p.Tasks {
		work[tk.Title] = tk.HasWork()
		if tk.Verification != (tk.Section == "Verification") {
			t.Errorf("task %q: Verification = %v in section %s", tk.Title, tk.Verification, tk.Section)
		}
	}
	if !work["Build"] || work["Think"] || work["Tests pass"] {
		t.Errorf("HasWork = %v, want only Build (a verify block is no work)", work)
	}
}

func TestVerificationOnlyIsNoPlan(t *testing.T) {
	p := Parse([]byte("# P\n## TODOs\n## Verification\n- [ ] checks\n"))
	if r := Validate("", p); r.OK() {
		t.Error("a plan with Verification items and no TODO task validates; want the no-task error")
	}
}

func TestContinuationCount(t *testing.T) {
	var c *Continuation
	if c.Stale(3) != 0 {
		t.Error("no count: stale nudges != 0")
	}
	st := &State{}
	st.Nudged(1)
	st.Nudged(1)
	if st.Continuation.Nudges != 2 || st.Continuation.Stale(1) != 2 {
		t.Fatalf("after two nudges at 1: %+v", st.Continuation)
	}
	if st.Continuation.Stale(2) != 0 {
		t.Error("progress since the last nudge still counts the old nudges")
	}
	st.Nudged(2)
	if st.Continuation.Nudges != 1 || st.Continuation.Completed != 2 {
		t.Errorf("a nudge after progress = %+v, want the count started again", st.Continuation)
	}
	// An interrupted run keeps the count; a stopped continuation is
	// re-armed by the next start.
	st.Resume("s2")
	if st.Continuation == nil || st.Continuation.Nudges != 1 {
		t.Errorf("resume cleared the count of a run that was not stopped: %+v", st.Continuation)
	}
	st.StopContinuation("the person sent a message")
	st.Resume("s3")
	if st.Continuation != nil {
		t.Errorf("resume kept a stopped continuation: %+v", st.Continuation)
	}
}
