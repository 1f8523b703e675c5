package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestPersonAskerOnATerminal asks on a real terminal while a turn runs: a
// line typed before the question stays the turn's, the question takes the
// next answers (a wrong one is asked again, a deny asks why), and the turn
// gets the lines typed after it.
func TestPersonAskerOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	screen := newWatchedBuffer()
	go func() { _, _ = io.Copy(screen, ptmx) }()
	e, err := newTermEditor(tty, tty, "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	a := &personAsker{in: e, errOut: tty}
	typeKeys := func(s string) {
		t.Helper()
		if _, err := ptmx.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	recv := func(ch <-chan string) string {
		t.Helper()
		select {
		case l := <-ch:
			return l
		case <-time.After(time.Minute):
			t.Fatalf("no line; the terminal shows:\n%s", screen.String())
			return ""
		}
	}

	lines, stop := e.typed()
	defer stop()
	typeKeys("before\r")
	if got := recv(lines); got != "before" {
		t.Fatalf("the turn got %q, want the line typed before the question", got)
	}

	q := permissionQuestion{Agent: "loom", Tool: "bash", Args: `{"command":"git push"}`, Rule: "Bash(git push:*)"}
	ask := func() <-chan permissionAnswer {
		ch := make(chan permissionAnswer, 1)
		go func() { ch <- a.askPermission(context.Background(), q) }()
		return ch
	}
	answers := ask()
	screen.waitFor(t, "the question", permissionChoices, 1)
	for _, w := range []string{"loom wants to run bash", "git push", "Bash(git push:*)"} {
		if !strings.Contains(screen.String(), w) {
			t.Errorf("the question lacks %q:\n%s", w, screen.String())
		}
	}
	typeKeys("maybe\r")
	screen.waitFor(t, "the question again", permissionChoices, 2)
	typeKeys("n\r")
	screen.waitFor(t, "why", "why (sent to the agent", 1)
	typeKeys("pushing is for people\r")
	var got permissionAnswer
	select {
	case got = <-answers:
	case <-time.After(time.Minute):
		t.Fatalf("no answer; the terminal shows:\n%s", screen.String())
	}
	if got.Decision != denyCall || got.Reason != "pushing is for people" {
		t.Errorf("answer %+v, want a deny with the person's reason", got)
	}

	answers = ask()
	screen.waitFor(t, "the next question", permissionChoices, 3)
	typeKeys("a\r")
	if got := <-answers; got.Decision != allowSession {
		t.Errorf("a gave %v, want allow for this session", got.Decision)
	}
	answers = ask()
	screen.waitFor(t, "the next question", permissionChoices, 4)
	typeKeys("y\r")
	if got := <-answers; got.Decision != allowOnce {
		t.Errorf("y gave %v, want allow once", got.Decision)
	}
	// Ctrl-C at the question is no answer: a deny.
	answers = ask()
	screen.waitFor(t, "the next question", permissionChoices, 5)
	typeKeys("\x03")
	if got := <-answers; got.Decision != denyCall || !strings.Contains(got.Reason, "did not answer") {
		t.Errorf("Ctrl-C gave %+v, want a deny saying the person did not answer", got)
	}

	typeKeys("after\r")
	if got := recv(lines); got != "after" {
		t.Errorf("the turn got %q after the questions, want the next line typed", got)
	}
}

// TestPersonAskerPlain asks where lines come whole (a pipe): the answer
// is the next line, not a message; the lines before and after are the
// chat's.
func TestPersonAskerPlain(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	in := newPlainInput(r, io.Discard)
	a := &personAsker{in: in, errOut: io.Discard}
	lines, stop := in.typed()
	defer stop()
	go func() { _, _ = io.WriteString(w, "before\n") }()
	if got := <-lines; got != "before" {
		t.Fatalf("got %q", got)
	}
	answers := make(chan permissionAnswer, 1)
	go func() {
		answers <- a.askPermission(context.Background(), permissionQuestion{Agent: "loom", Tool: "bash", Rule: "Bash"})
	}()
	// The answer is taken once the question waits for it.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		in.mu.Lock()
		waiting := in.answer != nil
		in.mu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the question never waited for an answer")
		}
	}
	go func() { _, _ = io.WriteString(w, "a\nafter\n") }()
	if got := <-answers; got.Decision != allowSession {
		t.Errorf("a gave %+v, want allow for this session", got)
	}
	if got := <-lines; got != "after" {
		t.Errorf("the chat got %q, want the line after the answer", got)
	}
	// The end of the input is no answer.
	answers2 := make(chan permissionAnswer, 1)
	go func() {
		answers2 <- a.askPermission(context.Background(), permissionQuestion{Agent: "loom", Tool: "bash", Rule: "Bash"})
	}()
	w.Close()
	if got := <-answers2; got.Decision != denyCall {
		t.Errorf("at the end of the input: %+v, want a deny", got)
	}
}

// TestNobodyToAsk: where no one can answer, a question is a deny that
// names the rule.
func TestNobodyToAsk(t *testing.T) {
	var a permissionAsker = nobodyToAsk{}
	got := a.askPermission(context.Background(), permissionQuestion{Agent: "loom", Tool: "bash", Rule: "Bash(git push:*)"})
	if got.Decision != denyCall || !strings.Contains(got.Reason, "Bash(git push:*)") || !strings.Contains(got.Reason, "no one") {
		t.Errorf("%+v, want a deny naming the rule and saying no one can answer", got)
	}
}
