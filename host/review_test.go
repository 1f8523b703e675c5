package host

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/host/busface"
	"github.com/weavehq/weave/plans"
)

// The reviewers are asked at once: each peer answers only once both
// requests have arrived, which a one-after-the-other fan-out never reaches.
func TestReviewPlanAsksEveryReviewerAtOnce(t *testing.T) {
	b, _ := bus.NewMemory(bus.DefaultOptions())
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	var mu sync.Mutex
	payloads := map[string]busface.AgentRequest{}
	peer := func(role string, ack bus.Ack) bus.Handler {
		return func(ctx context.Context, m bus.Message) (bus.Ack, error) {
			var p busface.AgentRequest
			_ = json.Unmarshal(m.Payload, &p)
			mu.Lock()
			payloads[role] = p
			mu.Unlock()
			arrived.Done()
			select {
			case <-both:
				return ack, nil
			case <-ctx.Done():
				return bus.Ack{}, ctx.Err()
			}
		}
	}
	for role, ack := range map[string]bus.Ack{
		agents.Weft: {Processed: true, StopPropagation: true, Message: "**[REJECT]**\n1. no test"},
		agents.Warp: {Processed: true, StopPropagation: true, Result: json.RawMessage(`{"output":"","error":"no model configured"}`)},
	} {
		if _, err := b.Subscribe(ctx, busface.AgentTopic(role), peer(role, ack), bus.SubscribeOptions{Name: role + "-peer"}); err != nil {
			t.Fatal(err)
		}
	}
	h := &Host{project: t.TempDir(), bus: b, logger: slog.New(slog.DiscardHandler)}
	got, err := h.reviewPlan(ctx, "ses_1", &plans.Plan{Name: "auth", Path: filepath.Join(h.project, ".weave", "plans", "auth.md")}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Reviewer != agents.Weft || got[0].Verdict != agents.VerdictReject || got[0].Reasons != "1. no test" ||
		got[1].Reviewer != agents.Warp || got[1].Error == "" || !strings.Contains(got[1].Error, "no model configured") {
		t.Errorf("reviewPlan = %+v, want weft's rejection, then warp's failure", got)
	}
	for role, p := range payloads {
		if p.Type != busface.AgentRequestType || p.SessionID != "ses_1" || len(p.From) != 0 || !strings.Contains(p.Prompt, `"auth"`) {
			t.Errorf("%s's request = %+v, want an agent.request in ses_1 with no delegation chain", role, p)
		}
	}
}

func TestWorkingTreeDiff(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("a.go", "package a\n")
	git("add", "-A")
	git("commit", "-q", "-m", "start")
	since := strings.TrimSpace(git("rev-parse", "HEAD"))
	write("a.go", "package a\n\nfunc A() {}\n")
	write("new.go", "package a\n\nvar New = 1\n")
	write(".weave/logs/weave.log", "log line\n")
	write(".weave/sessions/s.jsonl", "{}\n")
	write(".weave/state.json", "{}\n")
	write(".weave/plans/p.md", "# P\n")

	diff, cut, err := workingTreeDiff(context.Background(), dir, since)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+func A() {}", "+var New = 1", "b/.weave/plans/p.md"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	for _, local := range []string{"weave.log", "s.jsonl", "state.json"} {
		if strings.Contains(diff, local) {
			t.Errorf("diff holds machine-local %s:\n%s", local, diff)
		}
	}
	if cut {
		t.Error("a small diff was cut")
	}
	if st := git("status", "--porcelain", "--", "new.go"); !strings.HasPrefix(st, "??") {
		t.Errorf("git status new.go = %q: the repository's index was changed", st)
	}

	write("big.txt", strings.Repeat("a line of the big file\n", MaxReviewDiff/20))
	diff, cut, err = workingTreeDiff(context.Background(), dir, since)
	if err != nil {
		t.Fatal(err)
	}
	if !cut || len(diff) > MaxReviewDiff || !strings.HasSuffix(diff, "\n") {
		t.Errorf("a big diff: %d bytes, cut %v; want it cut at a line within %d", len(diff), cut, MaxReviewDiff)
	}
}
