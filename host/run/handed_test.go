package run

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/tools"
	"github.com/weavehq/weave/internal/gitwork"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// panicAgent is an agent that crashes on every task it is handed.
type panicAgent struct{}

func (panicAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "crash", Kind: plugins.KindAgent}, nil
}

func (panicAgent) Handle(context.Context, plugins.Host, plugins.AgentRequest) (plugins.AgentResponse, error) {
	panic("the agent crashed")
}

// handedWorld is a worker's repository holding a coordinator's commit (with
// a .weave/ of the coordinator's own), and the host a worker process loads
// once.
func handedWorld(t *testing.T, agent plugins.Agent) (*HandedHost, *gitwork.Repo, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".weave"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"README": "hi\n", ".weave/config.yaml": "runbook:\n  block_timeout: 1h\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "T"}, {"config", "user.email", "t@example.com"},
		{"add", "-A", "-f"}, {"commit", "-q", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	repo, err := gitwork.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := repo.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	gate, err := tools.NewGate(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := tools.New(dir, cfg, gate, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &HandedHost{Config: cfg, Tools: tl, Agent: agent}, repo, base
}

func handedTask(t *testing.T, repo *gitwork.Repo, base, body string, n, slot int) HandedTask {
	t.Helper()
	p, err := plans.ParseContext(context.Background(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	p.Name = "p"
	task, ok := p.ByOrdinal(n)
	if !ok {
		t.Fatalf("no task %d", n)
	}
	return HandedTask{Repo: repo, Dir: filepath.Join(repo.Root, ".weave", "worktrees", "w"+strconv.Itoa(slot)), Slot: slot,
		Out: &strings.Builder{}, Assignment: Assignment{Plan: p, Task: task, Session: "s1", Base: base,
			Branch: "weave/worker-slot-" + strconv.Itoa(slot), Attempt: 1, AttemptID: "att" + strconv.Itoa(n)}}
}

// TestHandedTaskPanicFailsAlone: a task whose agent panics fails, with
// what happened; the process and its host go on, and the next task on the
// same slot runs and commits its work alone, the coordinator's .weave/
// neither read nor dropped from the commit.
func TestHandedTaskPanicFailsAlone(t *testing.T) {
	h, repo, base := handedWorld(t, panicAgent{})
	body := plan(task(1, "Model work", "", ""), task(2, "Write two", "echo two > two.txt", "test -f two.txt"))
	ctx := context.Background()
	_, err := h.Run(ctx, handedTask(t, repo, base, body, 1, 1))
	if err == nil || !strings.Contains(err.Error(), "the agent crashed") {
		t.Fatalf("Run of a task whose agent panics = %v, want its failure naming the panic", err)
	}
	out, err := h.Run(ctx, handedTask(t, repo, base, body, 2, 1))
	if err != nil {
		t.Fatalf("Run of the next task = %v", err)
	}
	files, err := repo.Git(ctx, "", "ls-tree", "-r", "--name-only", out.Commit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(files, "two.txt") || !strings.Contains(files, ".weave/config.yaml") {
		t.Errorf("files of the task's commit: %q; want two.txt and the base's own .weave/config.yaml", files)
	}
	msg, _ := repo.Git(ctx, "", "log", "-1", "--format=%B", out.Commit)
	for _, want := range []string{"Write two", "Weave-Plan: p", "Weave-Task: 2", "Weave-Attempt: att2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message %q lacks %q", msg, want)
		}
	}
}

// TestHandedTaskTakenBackKillsItsBlocks: a task whose context ends (its
// lease taken back) stops at once, and every process its block started is
// killed with it.
func TestHandedTaskTakenBackKillsItsBlocks(t *testing.T) {
	h, repo, base := handedWorld(t, nil)
	m := t.TempDir()
	pidFile := filepath.Join(m, "pid")
	body := plan(task(1, "Linger", "sleep 600 & echo $! > "+pidFile+".tmp; mv "+pidFile+".tmp "+pidFile+"; wait", ""))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := h.Run(ctx, handedTask(t, repo, base, body, 1, 1))
		done <- err
	}()
	guard := time.After(time.Minute)
	var pid int
	for pid == 0 {
		select {
		case err := <-done:
			t.Fatalf("the task ended before it was taken back: %v", err)
		case <-guard:
			t.Fatal("the block did not start")
		case <-time.After(20 * time.Millisecond):
		}
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run of a task taken back = %v, want context.Canceled", err)
		}
	case <-guard:
		t.Fatal("the task did not stop when taken back")
	}
	for alive(pid) {
		select {
		case <-guard:
			t.Fatalf("process %d of the task's block outlived the task", pid)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// alive reports whether process pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
