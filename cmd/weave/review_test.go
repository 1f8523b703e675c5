package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/host/model/modeltest"
)

// reviewPlan writes a file the reviewers should see in the diff.
const reviewPlan = "# Feature\n\n## TODOs\n\n- [ ] 1. Write the feature\n  ```sh\n  printf 'func Feature() {}\\n' > feature.go\n  ```\n  ```sh verify\n  test -s feature.go\n  ```\n- [ ] 2. Document it\n  ```sh\n  echo '# Feature' > FEATURE.md\n  ```\n"

// gitProject is a project in a git repository with one commit.
func gitProject(t *testing.T, planFiles map[string]string) string {
	t.Helper()
	dir := project(t, planFiles)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "start"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// reviewerTurns answers Weft and Warp, each with its own turn whatever
// order they ask in.
func reviewerTurns(weft, warp string) []modeltest.Turn {
	return []modeltest.Turn{{Match: "You are Weft", Text: weft}, {Match: "You are Warp", Text: warp}}
}

// requestText is the system prompt and the messages of a recorded request.
func requestText(t *testing.T, r modeltest.Request) (system, user string) {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := r.Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, m := range body.Messages {
		switch m.Role {
		case "system":
			system += m.Content
		case "user":
			user += m.Content
		}
	}
	return system, user
}

// transcriptReviews reads the review lines of the project's transcripts.
func transcriptReviews(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, ".weave", "sessions", "*.jsonl"))
	got := map[string]string{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var line struct {
				Type   string `json:"type"`
				Review *struct {
					Plan, Since, Reviewer, Verdict string
				} `json:"review"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Type == "review" && line.Review != nil {
				got[line.Review.Reviewer] = line.Review.Verdict + " " + line.Review.Plan
			}
		}
		fh.Close()
	}
	return got
}

func TestReviewOnCompleteThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("a rejection leaves the plan complete and exits non-zero with the reasons", func(t *testing.T) {
		dir := gitProject(t, map[string]string{"feature": reviewPlan})
		srv := modeltest.NewServer(t, reviewerTurns(
			"**[REJECT]**\n1. feature.go:1: Feature has no test.\n2. FEATURE.md says nothing.",
			"[APPROVE] Nothing here reaches the network or a secret.")...)
		env := append(chatEnv(t, srv), "WEAVE_REVIEW_ON_COMPLETE=true")
		code, out, errOut := runWeave(t, bin, dir, env, "start-work", "feature")
		if code != exitFailed {
			t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFailed, out, errOut)
		}
		plan, err := os.ReadFile(filepath.Join(dir, ".weave", "plans", "feature.md"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(plan), "- [ ]") {
			t.Errorf("the plan is not complete after a rejected review:\n%s", plan)
		}
		for _, want := range []string{"plan feature done: 2/2", "weft [REJECT] 1. feature.go:1: Feature has no test.", "2. FEATURE.md says nothing.", "warp [APPROVE]"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		for _, want := range []string{"review of plan feature not approved", "weft [REJECT] 1. feature.go:1: Feature has no test.", "weave review --plan feature --since "} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut)
			}
		}
		if strings.Contains(errOut, "warp") {
			t.Errorf("stderr names warp, which approved:\n%s", errOut)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model requests, want one per reviewer", len(reqs))
		}
		seen := map[string]bool{}
		for _, r := range reqs {
			system, user := requestText(t, r)
			for _, role := range []string{"Weft", "Warp"} {
				if strings.Contains(system, "You are "+role) {
					seen[role] = true
				}
			}
			if !strings.Contains(user, "+func Feature() {}") || !strings.Contains(user, "+# Feature") || !strings.Contains(user, "[APPROVE] or [REJECT]") {
				t.Errorf("a reviewer's request lacks the diff of the new files:\n%s", user)
			}
		}
		if !seen["Weft"] || !seen["Warp"] {
			t.Errorf("reviewers asked: %v, want Weft and Warp", seen)
		}
		if got := transcriptReviews(t, dir); got["weft"] != "reject feature" || got["warp"] != "approve feature" {
			t.Errorf("transcript reviews = %v, want weft's rejection and warp's approval of feature", got)
		}
	})

	t.Run("approved by both, the run exits 0 and shows the verdicts", func(t *testing.T) {
		dir := gitProject(t, map[string]string{"feature": reviewPlan})
		srv := modeltest.NewServer(t, reviewerTurns("[APPROVE] Small and tested.", "  **[approve]** no attack surface")...)
		env := append(chatEnv(t, srv), "WEAVE_REVIEW_ON_COMPLETE=true")
		code, out, errOut := runWeave(t, bin, dir, env, "start-work", "feature", "--json")
		if code != exitOK {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		verdicts := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev struct{ Type, Agent, Verdict, Reason string }
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("not JSON: %q", line)
			}
			if ev.Type == "review" {
				verdicts[ev.Agent] = ev.Verdict + ": " + ev.Reason
			}
		}
		if verdicts["weft"] != "approve: Small and tested." || verdicts["warp"] != "approve: no attack surface" {
			t.Errorf("review events = %v, want both approvals with their reasons", verdicts)
		}
	})

	t.Run("the key: weave init shows it, config show --sources says where it came from", func(t *testing.T) {
		dir := t.TempDir()
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
		if code, _, errOut := runWeave(t, bin, dir, env, "init"); code != 0 {
			t.Fatalf("init: %s", errOut)
		}
		cfg, err := os.ReadFile(filepath.Join(dir, ".weave", "config.yaml"))
		if err != nil || !strings.Contains(string(cfg), "# review:\n") || !strings.Contains(string(cfg), "#   on_complete: false") {
			t.Errorf("init's config lacks review.on_complete (off):\n%s", cfg)
		}
		_, out, _ := runWeave(t, bin, dir, append(env, "WEAVE_REVIEW_ON_COMPLETE=true"), "config", "show", "--sources")
		if !strings.Contains(out, "on_complete: true # env: WEAVE_REVIEW_ON_COMPLETE") {
			t.Errorf("config show --sources = %s, want review.on_complete from the environment", out)
		}
	})

	t.Run("off by default: no reviewer is asked", func(t *testing.T) {
		dir := gitProject(t, map[string]string{"feature": reviewPlan})
		srv := modeltest.NewServer(t)
		code, out, errOut := runWeave(t, bin, dir, chatEnv(t, srv), "start-work", "feature")
		if code != exitOK || len(srv.Requests()) != 0 || strings.Contains(out, "review") {
			t.Errorf("exit %d, %d model requests, stdout %q, stderr %q; want a plain run", code, len(srv.Requests()), out, errOut)
		}
	})
}

func TestReviewCommandThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)

	t.Run("the active plan's diff since start_sha reaches the reviewers", func(t *testing.T) {
		dir := gitProject(t, map[string]string{"feature": reviewPlan})
		srv := modeltest.NewServer(t, reviewerTurns("[APPROVE] Fine.", "[REJECT]\n1. high: secret.txt holds a key.")...)
		env := chatEnv(t, srv)
		// Task 2 is left for a person: the plan stays active, with its
		// start_sha in state.json.
		if code, out, errOut := runWeave(t, bin, dir, env, "start-work", "feature", "--skip", "2"); code != exitPaused {
			t.Fatalf("start-work: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("KEY=not-a-real-key\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runWeave(t, bin, dir, env, "review")
		if code != exitFailed {
			t.Fatalf("review: exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFailed, out, errOut)
		}
		if !strings.Contains(out, "weft [APPROVE] Fine.") || !strings.Contains(out, "warp [REJECT]") || !strings.Contains(out, "1. high: secret.txt holds a key.") {
			t.Errorf("stdout = %q, want both verdicts with the reasons", out)
		}
		if !strings.Contains(errOut, "reviewing plan feature since ") || !strings.Contains(errOut, "not approved") || !strings.Contains(errOut, ".weave/sessions/") {
			t.Errorf("stderr = %q, want what is reviewed, the rejection and where it is kept", errOut)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model requests, want 2", len(reqs))
		}
		for _, r := range reqs {
			_, user := requestText(t, r)
			for _, want := range []string{"+func Feature() {}", "+KEY=not-a-real-key", "+func main() {}", "diff --git a/main.go b/main.go"} {
				if !strings.Contains(user, want) {
					t.Errorf("the request lacks %q of the diff:\n%s", want, user)
				}
			}
			for _, leaked := range []string{".weave/logs", ".weave/state.json", ".weave/sessions"} {
				if strings.Contains(user, "+++ b/"+leaked) {
					t.Errorf("the diff holds machine-local %s:\n%s", leaked, user)
				}
			}
		}
		if got := transcriptReviews(t, dir); got["weft"] != "approve feature" || got["warp"] != "reject feature" {
			t.Errorf("transcript reviews = %v", got)
		}
		// The repository's own index is not touched.
		st := exec.Command("git", "status", "--porcelain", "--", "secret.txt")
		st.Dir = dir
		if b, err := st.Output(); err != nil || !strings.HasPrefix(string(b), "??") {
			t.Errorf("git status secret.txt = %q, %v; want it still untracked", b, err)
		}
	})

	t.Run("no git: a clear message", func(t *testing.T) {
		dir := project(t, map[string]string{"feature": reviewPlan})
		srv := modeltest.NewServer(t)
		code, _, errOut := runWeave(t, bin, dir, append(chatEnv(t, srv), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir)), "review", "--plan", "feature")
		if code != exitFailed || !strings.Contains(errOut, "not in a git repository") || len(srv.Requests()) != 0 {
			t.Errorf("exit %d, stderr %q, %d requests; want 1 and a message naming git", code, errOut, len(srv.Requests()))
		}
	})

	t.Run("a finished plan needs --since", func(t *testing.T) {
		dir := gitProject(t, map[string]string{"feature": reviewPlan})
		srv := modeltest.NewServer(t, reviewerTurns("[APPROVE] ok", "[APPROVE] ok")...)
		env := chatEnv(t, srv)
		if code, _, errOut := runWeave(t, bin, dir, env, "start-work", "feature"); code != exitOK {
			t.Fatalf("start-work: exit %d: %s", code, errOut)
		}
		code, _, errOut := runWeave(t, bin, dir, env, "review", "--plan", "feature")
		if code != exitFailed || !strings.Contains(errOut, "--since REF") {
			t.Errorf("exit %d, stderr %q; want a message naming --since", code, errOut)
		}
		code, out, errOut := runWeave(t, bin, dir, env, "review", "--plan", "feature", "--since", "HEAD", "--json")
		if code != exitOK {
			t.Fatalf("review --since HEAD: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		var rep struct {
			Approved bool
			Reviews  []struct{ Reviewer, Verdict string }
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Approved || len(rep.Reviews) != 2 ||
			rep.Reviews[0].Reviewer != "weft" || rep.Reviews[0].Verdict != "approve" || rep.Reviews[1].Verdict != "approve" {
			t.Errorf("stdout = %q (%v), want both approvals as one JSON document", out, err)
		}
	})
}

// Ctrl-C while the reviewers think leaves the plan done and says how to
// have its work reviewed; the run exits as paused, not as rejected.
func TestReviewInterruptedByCtrlCPauses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	dir := gitProject(t, map[string]string{"feature": reviewPlan})
	hold := make(chan struct{})
	defer close(hold)
	srv := modeltest.NewServer(t,
		modeltest.Turn{Match: "You are Weft", Text: "Reading the change", Hold: hold},
		modeltest.Turn{Match: "You are Warp", Text: "Reading the change", Hold: hold})
	env := append(chatEnv(t, srv), "WEAVE_REVIEW_ON_COMPLETE=true")
	cmd := weaveCmd(t, dir, env, "start-work", "--json", "feature")
	// A terminal's Ctrl-C signals weave's whole process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := startUntil(t, cmd, `"type":"review.started"`)
	// Both reviewers are waiting on the model before the interrupt.
	for deadline := time.Now().Add(30 * time.Second); len(srv.Requests()) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the reviewers asked the model %d times, want 2\nstderr: %s", len(srv.Requests()), stderr)
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitPaused {
		t.Fatalf("weave after Ctrl-C during the review: %v, want exit %d (paused)\nstderr: %s", err, exitPaused, stderr)
	}
	if want := "review interrupted: plan feature is done; run `weave review --plan feature --since "; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr = %s, want %q", stderr, want)
	}
	if strings.Contains(stderr.String(), "not approved") {
		t.Errorf("an interrupted review reads as a rejection:\n%s", stderr)
	}
	if plan := readFile(t, filepath.Join(dir, ".weave", "plans", "feature.md")); strings.Contains(plan, "- [ ]") {
		t.Errorf("the plan is not complete after an interrupted review:\n%s", plan)
	}
}
