package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"

	"github.com/weavehq/weave/host/model/modeltest"
)

// termChat is weave chat on a whole terminal, as a person runs it: stdin
// and stderr are the terminal, and stdout too unless it is piped.
type termChat struct {
	cmd *exec.Cmd
	tty *os.File
	// screen is all the terminal shows; out is stdout when piped.
	screen, out *watchedBuffer
	exited      chan error
}

func startTermChat(t *testing.T, bin, dir string, env []string, pipeOut bool) *termChat {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	c := &termChat{cmd: exec.Command(bin, "chat"), tty: ptmx, screen: newWatchedBuffer(), out: newWatchedBuffer(), exited: make(chan error, 1)}
	c.cmd.Dir, c.cmd.Env = dir, append(env, "TERM=xterm-256color")
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = tty, tty, tty
	if pipeOut {
		c.cmd.Stdout = c.out
	}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = tty.Close()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				_, _ = c.screen.Write(buf[:n])
			}
			if err != nil {
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

// typeKeys types keys on the terminal, as they come from a keyboard.
func (c *termChat) typeKeys(t *testing.T, keys string) {
	t.Helper()
	if _, err := c.tty.Write([]byte(keys)); err != nil {
		t.Fatal(err)
	}
}

func (c *termChat) wait(t *testing.T) int {
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
		t.Fatalf("chat did not exit; the terminal shows:\n%s", c.screen.String())
		return -1
	}
}

// lastUserMessage is the person's message in a recorded model request.
func lastUserMessage(t *testing.T, srv *modeltest.Server, i int) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); len(srv.Requests()) <= i; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no model request %d", i)
		}
	}
	msgs := chatMessages(t, srv.Requests()[i])
	return strings.TrimPrefix(msgs[len(msgs)-1], "user: ")
}

const (
	keyLeft  = "\x1b[D"
	keyUp    = "\x1b[A"
	altEnter = "\x1b\r"
)

// TestTermChatEditing types on a real terminal: a line edited in its
// middle with the cursor keys reaches the model edited, with no escape
// codes; Up recalls the last message; a trailing backslash and Alt-Enter
// go on to a new line of the same message; Ctrl-C drops what is typed and,
// at an empty prompt, ends the chat. The history is kept in the user's
// state directory, for its owner only, and not in the project. The answer's
// markdown is rendered for the terminal, with a spinner before it.
func TestTermChatEditing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, nil)
	answer := "# Title\n\nSome **bold** words.\n\n- one\n- two\n"
	srv := modeltest.NewServer(t,
		modeltest.Turn{Text: answer},
		modeltest.Turn{Text: "Again."},
		modeltest.Turn{Text: "Two lines."},
		modeltest.Turn{Text: "Two more."},
		modeltest.Turn{Text: "Pasted."},
		modeltest.Turn{Text: "Kept."},
	)
	state := t.TempDir()
	c := startTermChat(t, bin, dir, append(chatEnv(t, srv), "XDG_STATE_HOME="+state), false)
	c.screen.waitFor(t, "the prompt", chatPrompt, 1)

	c.typeKeys(t, "hell world"+strings.Repeat(keyLeft, 6)+"o\r")
	if got := lastUserMessage(t, srv, 0); got != "hello world" {
		t.Errorf("the model got %q, want the edited line %q", got, "hello world")
	}
	c.screen.waitFor(t, "the rendered list", "two", 1)
	c.screen.waitFor(t, "the second prompt", chatPrompt, 2)
	shown := ansi.Strip(c.screen.String())
	for _, w := range []string{"Title", "bold", "words", "•"} {
		if !strings.Contains(shown, w) {
			t.Errorf("the terminal lacks %q:\n%s", w, shown)
		}
	}
	for _, raw := range []string{"**", "# Title", "- one"} {
		if strings.Contains(shown, raw) {
			t.Errorf("the terminal shows the raw markdown %q:\n%s", raw, shown)
		}
	}
	if s := c.screen.String(); !strings.Contains(s, "thinking") || !strings.Contains(s, "\r\x1b[K") {
		t.Errorf("no spinner shown and cleared before the answer:\n%q", s)
	}

	c.typeKeys(t, keyUp+"\r")
	if got := lastUserMessage(t, srv, 1); got != "hello world" {
		t.Errorf("Up then Enter sent %q, want the last message again", got)
	}
	c.screen.waitFor(t, "the third prompt", chatPrompt, 3)

	c.typeKeys(t, "first line\\\r")
	c.screen.waitFor(t, "the continuation prompt", "… ", 1)
	c.typeKeys(t, "second line\r")
	if got := lastUserMessage(t, srv, 2); got != "first line\nsecond line" {
		t.Errorf("a line ending in a backslash then another sent %q, want one message of two lines", got)
	}
	c.screen.waitFor(t, "the fourth prompt", chatPrompt, 4)

	c.typeKeys(t, "one"+altEnter)
	c.screen.waitFor(t, "the continuation prompt", "… ", 2)
	c.typeKeys(t, "two\r")
	if got := lastUserMessage(t, srv, 3); got != "one\ntwo" {
		t.Errorf("Alt-Enter sent %q, want one message of two lines", got)
	}
	c.screen.waitFor(t, "the fifth prompt", chatPrompt, 5)

	c.typeKeys(t, "\x1b[200~alpha\nbeta\x1b[201~\r")
	if got := lastUserMessage(t, srv, 4); got != "alpha\nbeta" {
		t.Errorf("a pasted block sent %q, want one message of its two lines", got)
	}
	c.screen.waitFor(t, "the prompt after the paste", chatPrompt, 6)

	c.typeKeys(t, "drop this\x03")
	c.screen.waitFor(t, "the line dropped", "^C", 1)
	c.screen.waitFor(t, "a new prompt", chatPrompt, 7)
	c.typeKeys(t, "kept\r")
	if got := lastUserMessage(t, srv, 5); got != "kept" {
		t.Errorf("after Ctrl-C the model got %q, want only what was typed after it", got)
	}
	c.screen.waitFor(t, "the prompt after it", chatPrompt, 8)
	c.typeKeys(t, "\x03")
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d after Ctrl-C at an empty prompt; the terminal shows:\n%s", code, c.screen.String())
	}
	if len(srv.Requests()) != 6 {
		t.Errorf("%d model requests, want 6", len(srv.Requests()))
	}
	if !strings.Contains(c.screen.String(), "weave chat --resume chat-") {
		t.Errorf("no word on how to resume:\n%s", c.screen.String())
	}

	files, _ := filepath.Glob(filepath.Join(state, "weave", "history", "*"))
	if len(files) != 1 {
		t.Fatalf("history files %v, want one", files)
	}
	fi, err := os.Stat(files[0])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file %v, %v; want mode 0600", fi, err)
	}
	b, _ := os.ReadFile(files[0])
	if want := "\"hello world\"\n\"first line\\nsecond line\"\n\"one\\ntwo\"\n\"alpha\\nbeta\"\n\"kept\"\n"; string(b) != want {
		t.Errorf("history holds %q, want %q", b, want)
	}
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
		if strings.Contains(filepath.Base(p), "history") {
			t.Errorf("a history file in the project: %s", p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// A new chat in the project recalls the last one's messages.
	srv2 := modeltest.NewServer(t, modeltest.Turn{Text: "Recalled."})
	c = startTermChat(t, bin, dir, append(chatEnv(t, srv2), "XDG_STATE_HOME="+state), false)
	c.screen.waitFor(t, "the prompt", chatPrompt, 1)
	c.typeKeys(t, keyUp+keyUp+"\r")
	if got := lastUserMessage(t, srv2, 0); got != "alpha\nbeta" {
		t.Errorf("Up Up in a new chat sent %q, want the message before the last, with its line break", got)
	}
	c.screen.waitFor(t, "the prompt after it", chatPrompt, 2)
	c.typeKeys(t, "\x04")
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d after Ctrl-D", code)
	}
}

// TestTermChatPipedMarkdown: with stdout piped (stdin and stderr still the
// terminal, so the line is edited), the answer is the model's text as it
// wrote it, markdown and all, and nothing else is drawn on stdout.
func TestTermChatPipedMarkdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	dir := project(t, nil)
	answer := "# Title\n\nSome **bold** words."
	srv := modeltest.NewServer(t, modeltest.Turn{Text: answer})
	c := startTermChat(t, bin, dir, chatEnv(t, srv), true)
	c.screen.waitFor(t, "the prompt", chatPrompt, 1)
	c.typeKeys(t, "i"+keyLeft+"h\r")
	if got := lastUserMessage(t, srv, 0); got != "hi" {
		t.Errorf("the model got %q, want the edited line %q", got, "hi")
	}
	c.out.waitFor(t, "the answer", "words.\n", 1)
	if got := c.out.String(); got != answer+"\n" {
		t.Errorf("stdout = %q, want the markdown as written: %q", got, answer+"\n")
	}
	c.screen.waitFor(t, "the prompt after it", chatPrompt, 2)
	c.typeKeys(t, "\x04")
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d after Ctrl-D", code)
	}
}

// TestTermChatInterrupt: on a whole terminal, the terminal is in its
// normal mode while a turn runs: a line typed then is queued (and heard
// at once), Ctrl-C interrupts the turn as a signal, and the queued line is
// answered after it, with the editor back for the next one.
func TestTermChatInterrupt(t *testing.T) {
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
		modeltest.Turn{Text: "Edited."},
	)
	c := startTermChat(t, bin, dir, chatEnv(t, srv), false)
	c.screen.waitFor(t, "the prompt", chatPrompt, 1)
	c.typeKeys(t, "tell me everything\r")
	// The answer is held in the middle of its first paragraph, which is
	// rendered once complete: wait for the model to be asked.
	lastUserMessage(t, srv, 0)
	c.typeKeys(t, "and more\r")
	c.screen.waitFor(t, "the line queued", "(queued: answered when this turn ends)", 1)
	c.typeKeys(t, "\x03")
	c.screen.waitFor(t, "the interruption", "interrupted", 1)
	if got := lastUserMessage(t, srv, 1); got != "and more" {
		t.Errorf("the queued line reached the model as %q", got)
	}
	c.screen.waitFor(t, "the answer to it", "Going", 1)
	c.screen.waitFor(t, "the prompt after it", chatPrompt, 3)
	c.typeKeys(t, "ba"+keyLeft+"c\r")
	if got := lastUserMessage(t, srv, 2); got != "bca" {
		t.Errorf("after the interruption the editor sent %q, want %q", got, "bca")
	}
	c.screen.waitFor(t, "the last prompt", chatPrompt, 4)
	c.typeKeys(t, "\x04")
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d after Ctrl-D", code)
	}
}
