package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/host/model/modeltest"
)

// These tests hold a `weave worker`'s task to what a local worker's task
// gets: the instructions and skills of the code it works on (the
// coordinator's, at the task's base), never the worker repository's, and
// the session hooks of the worker's own config around it.

// ownWorkerRepo is a worker's own repository at dir, holding files.
func ownWorkerRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "own")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for name, body := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// commitCoord commits files (and links, name -> target) to the
// coordinator's repository and makes the result the world's base.
func commitCoord(t *testing.T, w *coordWorld, files, links map[string]string) {
	t.Helper()
	ctx := context.Background()
	for name, body := range files {
		p := filepath.Join(w.repo.Root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range links {
		p := filepath.Join(w.repo.Root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.repo.Git(ctx, "", "add", "-A", "-f"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.repo.Git(ctx, "", "commit", "-q", "-m", "code"); err != nil {
		t.Fatal(err)
	}
	w.base, _, _ = w.repo.Head(ctx)
}

// TestWorkerTaskToldItsCodesInstructions: a model-driven task a worker is
// awarded is told the CLAUDE.md and the skills of the coordinator's code
// it works on, as a local worker's task is told the project's, and not the
// CLAUDE.md of the worker's own repository. The code cannot reach past its
// worktree through them: a skill whose SKILL.md links to a file of the
// worker's machine is not read. What the worker's own SessionStart hook
// says goes with the task's first prompt. Before, the task was told the worker
// repository's instructions, read once when the worker started.
func TestWorkerTaskToldItsCodesInstructions(t *testing.T) {
	url := bustest.StartNATS(t).URL()
	w := newCoordWorld(t, url, 10*time.Second)
	secret := filepath.Join(t.TempDir(), "notes.md")
	if err := os.WriteFile(secret, []byte("---\ndescription: SECRET-OF-THE-WORKER-9\n---\nSECRET-OF-THE-WORKER-9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	commitCoord(t, w, map[string]string{
		"CLAUDE.md":                       "COORD-RULE-7: indent with tabs.\n",
		".claude/skills/release/SKILL.md": "---\ndescription: COORD-SKILL-RELEASE cuts a release\n---\nsteps\n",
		".weave/skills/deploy/SKILL.md":   "---\ndescription: COORD-SKILL-DEPLOY ships it\n---\nsteps\n",
	}, map[string]string{".claude/skills/leak/SKILL.md": secret})
	// The worker's own SessionStart hook speaks to the model, as a run's does.
	repo := ownWorkerRepo(t, map[string]string{"CLAUDE.md": "WORKER-RULE-3: never indent.\n", ".weave/config.yaml": `hooks:
  SessionStart:
    - hooks:
        - type: command
          command: "cat >/dev/null; echo START-CONTEXT-5"
`})

	claim := tool("plan_check", `{"plan":"p","task":1}`)
	claim.AfterTool = "wrote"
	done := modeltest.Turn{Text: "Done."}
	done.AfterTool = "passed its verify blocks"
	write := tool("write", `{"path":"alpha.txt","content":"alpha\n"}`)
	var turns []modeltest.Turn
	for _, turn := range []modeltest.Turn{claim, done, write} {
		turn.Match, turn.Default = "alpha.txt says alpha", true
		turns = append(turns, turn)
	}
	srv := modeltest.NewServer(t, turns...)
	env := append(chatEnv(t, srv), "WEAVE_SANDBOX_MODE=off")
	startWorkerEnv(t, env, url, "told", "--repo", repo)

	const plan = "# p\n\n## TODOs\n\n- [ ] 1. Write alpha\n  **What**: alpha.txt says alpha.\n"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	got, err := w.coord.Offer(ctx, w.offer(plan, 1))
	if err != nil {
		t.Fatal(err)
	}
	if got.Commit == "" || got.Error != "" {
		t.Fatalf("the task: commit %q, error %q", got.Commit, got.Error)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the task asked the model nothing")
	}
	if text := chatRequestText(t, reqs[0]); !strings.Contains(text, "START-CONTEXT-5") {
		t.Errorf("the task's first request lacks what the worker's SessionStart hook said:\n%s", text)
	}
	for i, r := range reqs {
		body := string(r.Body)
		for _, want := range []string{"COORD-RULE-7", "COORD-SKILL-RELEASE", "COORD-SKILL-DEPLOY"} {
			if !strings.Contains(body, want) {
				t.Errorf("request %d lacks %q of the task's code:\n%s", i, want, body)
			}
		}
		for _, not := range []string{"WORKER-RULE-3", "SECRET-OF-THE-WORKER-9"} {
			if strings.Contains(body, not) {
				t.Errorf("request %d carries %q:\n%s", i, not, body)
			}
		}
	}
}

// TestWorkerFiresSessionHooks: the session hooks of a worker's own config
// fire around each task it is awarded, with the task's plan, task and
// session, as a run's fire around its tasks; the coordinator's hooks that
// come with its code do not, and the plan's own events (TaskCompleted,
// fired as a task is ticked) are the coordinator's, never the worker's.
// Before, a worker's tasks fired only the tool events.
func TestWorkerFiresSessionHooks(t *testing.T) {
	url := bustest.StartNATS(t).URL()
	w := newCoordWorld(t, url, 10*time.Second)
	commitCoord(t, w, map[string]string{".weave/config.yaml": `hooks:
  SessionStart:
    - hooks:
        - ` + recordHook("coord.jsonl") + `
`}, nil)
	repo := ownWorkerRepo(t, map[string]string{".weave/config.yaml": `hooks:
  SessionStart:
    - hooks:
        - ` + recordHook("start.jsonl") + `
  SessionEnd:
    - hooks:
        - ` + recordHook("end.jsonl") + `
  TaskCompleted:
    - hooks:
        - ` + recordHook("completed.jsonl") + `
`})
	wp := startWorker(t, url, "hooked", "--repo", repo)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, task := range []int{2, 1} {
		got, err := w.coord.Offer(ctx, w.offer(workerPlan, task))
		if err != nil {
			t.Fatal(err)
		}
		if got.Commit == "" || got.Error != "" {
			t.Fatalf("task %d: commit %q, error %q", task, got.Commit, got.Error)
		}
	}
	wp.waitLine(t, "returned commit", func() string { return "" })
	starts := hookInputs(t, filepath.Join(repo, "start.jsonl"))
	ends := hookInputs(t, filepath.Join(repo, "end.jsonl"))
	if len(starts) != 2 || len(ends) != 2 {
		t.Fatalf("SessionStart fired %d times, SessionEnd %d; want each once per task:\nstarts %v\nends %v", len(starts), len(ends), starts, ends)
	}
	for i, in := range append(starts, ends...) {
		if in["session_id"] != "s1" || !strings.Contains(in["cwd"].(string), filepath.Join(".weave", "worktrees", "w1")) {
			t.Errorf("hook input %d = %v; want session s1, in the task's worktree", i, in)
		}
	}
	for i, in := range ends {
		if in["reason"] != "done" {
			t.Errorf("SessionEnd %d reason = %v, want done", i, in["reason"])
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "completed.jsonl")); err == nil {
		t.Error("TaskCompleted fired on the worker; the coordinator fires it as it ticks the task")
	}
	if _, err := os.Stat(filepath.Join(repo, "coord.jsonl")); err == nil {
		t.Error("a hook of the coordinator's code ran on the worker")
	}
}
