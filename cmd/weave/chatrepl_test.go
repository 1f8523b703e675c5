package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/weavehq/weave/host/model/modeltest"
)

// watchedBuffer collects a stream and lets a test wait until it says
// something.
type watchedBuffer struct {
	mu     sync.Mutex
	b      strings.Builder
	change chan struct{}
}

func newWatchedBuffer() *watchedBuffer { return &watchedBuffer{change: make(chan struct{})} }

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	close(w.change)
	w.change = make(chan struct{})
	return len(p), nil
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor waits until the stream holds want n times; the bound is only
// there so that a broken chat fails instead of hanging.
func (w *watchedBuffer) waitFor(t *testing.T, what string, want string, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		w.mu.Lock()
		got, ch := w.b.String(), w.change
		w.mu.Unlock()
		if strings.Count(got, want) >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waiting for %s (%q ×%d); got:\n%s", what, want, n, got)
		}
	}
}

// liveChat is weave chat running with a terminal for stdin, as a person
// starts it.
type liveChat struct {
	cmd      *exec.Cmd
	tty      *os.File // the terminal's master side: what the person types
	out, err *watchedBuffer
	exited   chan error
}

func startChat(t *testing.T, bin, dir string, env []string, args ...string) *liveChat {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	c := &liveChat{cmd: exec.Command(bin, append([]string{"chat"}, args...)...), tty: ptmx,
		out: newWatchedBuffer(), err: newWatchedBuffer(), exited: make(chan error, 1)}
	c.cmd.Dir, c.cmd.Env = dir, env
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = tty, c.out, c.err
	// The terminal is weave's controlling terminal, as in a shell: a ^C
	// typed on it interrupts weave's whole process group, its plugins
	// included.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = tty.Close()
	// The terminal echoes what is typed; nobody reads it but this.
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := ptmx.Read(buf); err != nil {
				return
			}
		}
	}()
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.exited
		_ = ptmx.Close()
	})
	return c
}

// say types a line.
func (c *liveChat) say(t *testing.T, line string) {
	t.Helper()
	if _, err := c.tty.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the chat to exit and returns its exit code.
func (c *liveChat) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-c.exited:
		c.exited <- err
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatalf("chat did not exit; stderr:\n%s", c.err.String())
		return -1
	}
}

// chatMessages is the messages of a recorded model request.
func chatMessages(t *testing.T, r modeltest.Request) []string {
	t.Helper()
	var body struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := r.Decode(&body); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range body.Messages {
		if m.Role != "system" {
			out = append(out, m.Role+": "+m.Content)
		}
	}
	return out
}

const chatPrompt = "› "

// TestInteractiveChat talks with Loom through a terminal: several turns
// that carry the conversation, the slash commands, Ctrl-D, then resuming
// the session in a new process and reading it back with weave sessions.
func TestInteractiveChat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, nil)
	srv := modeltest.NewServer(t,
		modeltest.Turn{Text: "Hello, I am Loom.", Usage: &modeltest.Usage{Input: 100, Output: 5}},
		modeltest.Turn{Text: "You said hi.", Usage: &modeltest.Usage{Input: 120, Output: 4}},
		modeltest.Turn{Text: "Still here.", Usage: &modeltest.Usage{Input: 140, Output: 3}},
	)
	env := chatEnv(t, srv)
	c := startChat(t, bin, dir, env)
	c.err.waitFor(t, "the first prompt", chatPrompt, 1)
	c.say(t, "hi")
	c.out.waitFor(t, "the first answer", "Hello, I am Loom.\n", 1)
	c.err.waitFor(t, "the second prompt", chatPrompt, 2)
	c.say(t, "what did I say?")
	c.out.waitFor(t, "the second answer", "You said hi.\n", 1)
	c.err.waitFor(t, "the third prompt", chatPrompt, 3)
	c.say(t, "/nope")
	c.err.waitFor(t, "the unknown command's error", "unknown command /nope; commands: /start-work, /plan, /status, /agents, /compact, /help, /exit", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 4)
	c.say(t, "/help")
	c.out.waitFor(t, "the help", "/start-work [plan]", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 5)
	c.say(t, "/agents")
	c.out.waitFor(t, "the agents", "DELEGATES", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 6)
	c.say(t, "/status")
	c.out.waitFor(t, "the session's tokens", "229 tokens (220 in, 9 out", 1)
	c.err.waitFor(t, "the prompt after the commands", chatPrompt, 7)
	if _, err := c.tty.Write([]byte{4}); err != nil { // Ctrl-D
		t.Fatal(err)
	}
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d after Ctrl-D; stderr:\n%s", code, c.err.String())
	}
	errOut := c.err.String()
	i := strings.Index(errOut, "weave chat --resume chat-")
	if i < 0 {
		t.Fatalf("stderr = %q, want the exit line saying how to resume", errOut)
	}
	id := strings.Fields(errOut[i+len("weave chat --resume "):])[0]

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2 (slash commands do not reach the model)", len(reqs))
	}
	want := []string{"user: hi", "assistant: Hello, I am Loom.", "user: what did I say?"}
	if got := chatMessages(t, reqs[1]); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("second turn's messages = %q, want the first turn carried: %q", got, want)
	}

	// A new process resumes the latest session.
	code, out, stderr := runWeave(t, bin, dir, env, "chat", "--resume", "-p", "still there?")
	if code != 0 || out != "Still here.\n" {
		t.Fatalf("chat --resume -p: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	want = append(want, "assistant: You said hi.", "user: still there?")
	if got := chatMessages(t, srv.Requests()[2]); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("resumed turn's messages = %q, want %q", got, want)
	}
	code, _, stderr = runWeave(t, bin, dir, env, "chat", "--resume", "chat-nothere", "-p", "hi")
	if code != 1 || !strings.Contains(stderr, `"chat-nothere"`) || !strings.Contains(stderr, "weave sessions list") {
		t.Errorf("chat --resume chat-nothere: exit %d, stderr %q; want 1 naming the id and weave sessions list", code, stderr)
	}

	// weave sessions sees it.
	code, out, stderr = runWeave(t, bin, dir, env, "sessions", "list")
	fields := strings.Split(strings.TrimRight(out, "\n"), "\t")
	if code != 0 || len(fields) != 7 || fields[0] != id || fields[1] != "loom" || fields[4] != "6" || fields[5] != "372" {
		t.Errorf("sessions list: exit %d, %q (stderr %s); want one line: %s, loom, 6 messages, 372 tokens", code, out, stderr, id)
	}
	code, out, _ = runWeave(t, bin, dir, env, "sessions", "show", id)
	for _, w := range []string{"you: hi", "loom: Hello, I am Loom.", "you: still there?", "total", "360", "12"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("sessions show: exit %d, output lacks %q:\n%s", code, w, out)
		}
	}
	code, out, _ = runWeave(t, bin, dir, env, "sessions", "show", id, "--json")
	var shown struct {
		ID      string
		Total   struct{ Input, Output int64 }
		ByAgent map[string]struct{ Input int64 } `json:"by_agent"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil || shown.ID != id || shown.Total.Input != 360 || shown.ByAgent["loom"].Input != 360 {
		t.Errorf("sessions show --json: exit %d, %v, %+v", code, err, shown)
	}
}

// TestInteractiveChatCtrlC: Ctrl-C typed on the terminal stops the answer
// in flight (the agent plugins, in weave's process group, get it too and
// live on) and the chat goes on with the cut-off turn in the
// conversation; SIGINT at the prompt leaves, saying how to resume.
func TestInteractiveChatCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, nil)
	hold := make(chan struct{})
	defer close(hold)
	srv := modeltest.NewServer(t,
		modeltest.Turn{Text: "Thinking about a very long answer", Hold: hold},
		modeltest.Turn{Text: "Going on."},
	)
	c := startChat(t, bin, dir, chatEnv(t, srv))
	c.err.waitFor(t, "the prompt", chatPrompt, 1)
	c.say(t, "tell me everything")
	// The server holds the answer after its first word until the request
	// is cancelled.
	c.out.waitFor(t, "the first word", "Thinking", 1)
	if _, err := c.tty.Write([]byte{3}); err != nil { // ^C on the terminal
		t.Fatal(err)
	}
	c.err.waitFor(t, "the interruption", "interrupted", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 2)
	c.say(t, "go on")
	c.out.waitFor(t, "the next answer", "Going on.\n", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 3)
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d after Ctrl-C at the prompt; stderr:\n%s", code, c.err.String())
	}
	if !strings.Contains(c.err.String(), "weave chat --resume chat-") {
		t.Errorf("stderr = %q, want how to resume", c.err.String())
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	got := strings.Join(chatMessages(t, reqs[1]), "\n")
	if !strings.HasPrefix(got, "user: tell me everything\nassistant: Thinking") || !strings.HasSuffix(got, "user: go on") {
		t.Errorf("the turn after Ctrl-C sent:\n%s\nwant the cut-off turn, then the new message", got)
	}
	// The cut-off turn is on file too, for --resume.
	files, _ := filepath.Glob(filepath.Join(dir, ".weave", "sessions", "chat-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files %v, want one", files)
	}
	b, _ := os.ReadFile(files[0])
	if !strings.Contains(string(b), "tell me everything") || !strings.Contains(string(b), "[interrupted]") {
		t.Errorf("transcript lacks the interrupted turn:\n%s", b)
	}
}

// TestInteractiveChatStartWork: /start-work runs a plan in the chat's
// session with the CLI's decision procedure, its progress in the
// transcript; state.json names the chat's session as the plan's.
func TestInteractiveChatStartWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	// Runbook tasks only: with a model configured, a task whose only block
	// is a verify block is the model's.
	dir := project(t, map[string]string{"ok": strings.Replace(okPlan, "```sh verify\n  true", "```sh\n  true\n  ```\n  ```sh verify\n  true", 1)})
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "Asking Pattern."})
	c := startChat(t, bin, dir, chatEnv(t, srv))
	c.err.waitFor(t, "the prompt", chatPrompt, 1)
	c.say(t, "/start-work")
	c.out.waitFor(t, "the plan done", "plan ok done: 2/2 tasks", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 2)
	c.say(t, "/start-work")
	c.out.waitFor(t, "nothing left", "complete", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 3)
	c.say(t, "/plan")
	c.err.waitFor(t, "the usage of /plan", "usage: /plan <what the plan is for>", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 4)
	c.say(t, "/plan add a dark mode toggle")
	c.out.waitFor(t, "loom's answer", "Asking Pattern.\n", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 5)
	c.say(t, "/exit")
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, c.err.String())
	}
	for _, w := range []string{"starting plan ok (0/2 done)", "task 1: Say hi", "    hi"} {
		if !strings.Contains(c.out.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, c.out.String())
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1 (runbook tasks need no model; /plan asks Loom)", len(reqs))
	}
	got := chatMessages(t, reqs[0])
	if len(got) != 1 || !strings.Contains(got[0], `task tool (agent "pattern")`) || !strings.HasSuffix(got[0], "add a dark mode toggle") {
		t.Errorf("/plan sent %q, want Loom asked to delegate the request to Pattern", got)
	}
}

// TestInteractiveChatMessageDuringRun: a line typed while /start-work runs
// reaches the hooks at once as the person's message (chat.message, source
// user, in the chat's session, with its transcript_path), before the run
// ends, and is answered once the run is over. The plan's only task waits
// for the UserPromptSubmit hook to have seen the message, so it finishes
// only if the message arrived during the run.
func TestInteractiveChatMessageDuringRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	plan := "# Wait\n\n## TODOs\n\n- [ ] 1. Wait for the person\n  ```sh\n  while [ ! -f .weave/heard ]; do sleep 0.05; done\n  ```\n"
	dir := project(t, map[string]string{"wait": plan})
	cfg := "hooks:\n  UserPromptSubmit:\n    - hooks:\n        - type: command\n          command: cat >> .weave/prompts.jsonl; echo >> .weave/prompts.jsonl; touch .weave/heard\n"
	writeConfig(t, dir, cfg)
	srv := modeltest.NewServer(t, modeltest.Turn{Text: "Noted."})
	c := startChat(t, bin, dir, chatEnv(t, srv))
	c.err.waitFor(t, "the prompt", chatPrompt, 1)
	c.say(t, "/start-work wait")
	c.out.waitFor(t, "the task started", "task 1: Wait for the person", 1)
	c.say(t, "hold on")
	c.out.waitFor(t, "the plan done", "plan wait done: 1/1 tasks", 1)
	c.out.waitFor(t, "the answer to the queued message", "Noted.\n", 1)
	c.say(t, "/exit")
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, c.err.String())
	}
	i := strings.Index(c.err.String(), "(session chat-")
	if i < 0 {
		t.Fatalf("stderr %q names no session", c.err.String())
	}
	session := strings.TrimSuffix(strings.Fields(c.err.String()[i+len("(session "):])[0], ")")
	b, err := os.ReadFile(filepath.Join(dir, ".weave", "prompts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		SessionID      string `json:"session_id"`
		TranscriptPath string `json:"transcript_path"`
		Prompt         string
	}
	if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &first); err != nil {
		t.Fatalf("hook input %q: %v", b, err)
	}
	if first.SessionID != session || first.Prompt != "hold on" ||
		first.TranscriptPath != filepath.Join(dir, ".weave", "sessions", session+".jsonl") {
		t.Errorf("the hook first saw %+v; want the person's message in session %s with its transcript", first, session)
	}
	if got := chatMessages(t, srv.Requests()[0]); len(got) != 1 || !strings.HasPrefix(got[0], "user: hold on") {
		t.Errorf("loom was sent %q, want the queued message", got)
	}
}

// TestInteractiveChatCompact: /compact has the model summarise the
// conversation, and the next turn sends the summary in its place.
func TestInteractiveChatCompact(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, nil)
	srv := modeltest.NewServer(t,
		modeltest.Turn{Text: "The capital of France is Paris.", Usage: &modeltest.Usage{Input: 100, Output: 8}},
		modeltest.Turn{Text: "SUMMARY: the person asked for the capital of France; it is Paris."},
		modeltest.Turn{Text: "Lyon is second.", Usage: &modeltest.Usage{Input: 60, Output: 4}},
	)
	c := startChat(t, bin, dir, chatEnv(t, srv))
	c.err.waitFor(t, "the first prompt", chatPrompt, 1)
	c.say(t, "what is the capital of France?")
	c.out.waitFor(t, "the answer", "Paris.\n", 1)
	c.err.waitFor(t, "the second prompt", chatPrompt, 2)
	c.say(t, "/compact")
	c.err.waitFor(t, "the line while the summary is written", "compacting the conversation: summarising", 1)
	c.err.waitFor(t, "the compaction line", "context compacted", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 3)
	c.say(t, "and the second city?")
	c.out.waitFor(t, "the next answer", "Lyon is second.\n", 1)
	c.err.waitFor(t, "the prompt after it", chatPrompt, 4)
	c.say(t, "/exit")
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, c.err.String())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want the question, the summary and the next question", len(reqs))
	}
	got := chatMessages(t, reqs[2])
	// The summary replaces the question; the model's last answer is kept.
	if len(got) < 2 || !strings.Contains(got[0], "SUMMARY: the person asked") || got[len(got)-1] != "user: and the second city?" ||
		strings.Contains(strings.Join(got, "\n"), "user: what is the capital of France?") {
		t.Errorf("the turn after /compact sent %q, want the summary in place of the first question, then the new one", got)
	}
}

// TestInteractiveChatMessagePausesContinuation: a person's message while
// Tapestry works a plan in the chat stops the continuation: when Tapestry
// ends its turn with the task unticked, the plan pauses instead of being
// nudged on, saying why.
func TestInteractiveChatMessagePausesContinuation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	plan := "# Notes\n\n## TODOs\n\n- [ ] 1. Write the notes\n  **What**: write notes.md\n  **Acceptance**: notes.md exists\n"
	dir := project(t, map[string]string{"notes": plan})
	hold := make(chan struct{})
	srv := modeltest.NewServer(t,
		// Tapestry, held mid-answer until the person has spoken; it ends
		// its turn without ticking.
		modeltest.Turn{Text: "Starting on the notes, more later.", Hold: hold},
		// Loom, for the person's message once the run is over.
		modeltest.Turn{Text: "Paused as you asked."},
	)
	c := startChat(t, bin, dir, chatEnv(t, srv))
	c.err.waitFor(t, "the prompt", chatPrompt, 1)
	c.say(t, "/start-work notes")
	for deadline := time.Now().Add(time.Minute); len(srv.Requests()) == 0; {
		if time.Now().After(deadline) {
			close(hold)
			t.Fatalf("tapestry never asked its model; stdout:\n%s\nstderr:\n%s", c.out.String(), c.err.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.say(t, "wait, stop there")
	// Said once every hook has heard the message.
	c.err.waitFor(t, "the message queued", "(queued: answered when this turn ends)", 1)
	close(hold)
	c.out.waitFor(t, "the pause for the person's message", "the user sent a message", 1)
	// Tapestry's turn was the only one it took: no continuation nudge.
	if reqs := srv.Requests(); len(reqs) == 0 || !strings.Contains(strings.Join(chatMessages(t, reqs[0]), "\n"), "Write the notes") {
		t.Errorf("the first model request was not Tapestry's task")
	} else if len(reqs) > 1 && strings.Contains(strings.Join(chatMessages(t, reqs[1]), "\n"), "Continue from the first unchecked task") {
		t.Errorf("Tapestry was nudged on although the person spoke: %q", chatMessages(t, reqs[1]))
	}
	// The queued message is answered after the run, as
	// TestInteractiveChatMessageDuringRun shows; here the chat is left.
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	c.wait(t)
	b, err := os.ReadFile(filepath.Join(dir, ".weave", "plans", "notes.md"))
	if err != nil || strings.Contains(string(b), "[x]") {
		t.Errorf("the task was ticked (%v):\n%s", err, b)
	}
}
