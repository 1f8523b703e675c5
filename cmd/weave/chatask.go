package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/weavehq/weave/host/tools"
)

// termAsker puts permission questions to the person at weave chat's
// terminal. The conversation's loop (chatREPL.turn) takes each question,
// shows it, and hands it the next line typed; questions from several
// calls at once are asked one after another.
type termAsker struct {
	// one holds the terminal for one question at a time.
	one       sync.Mutex
	questions chan *termQuestion
}

// termQuestion is a question shown at the terminal, waiting for its line.
type termQuestion struct {
	q    tools.Question
	line chan string
	// gone is closed when nobody can answer any more (Ctrl-D).
	gone chan struct{}
}

func newTermAsker() *termAsker { return &termAsker{questions: make(chan *termQuestion)} }

// AskPermission waits for the conversation to show q and for the person's
// answer.
func (a *termAsker) AskPermission(ctx context.Context, q tools.Question) (tools.Answer, error) {
	a.one.Lock()
	defer a.one.Unlock()
	tq := &termQuestion{q: q, line: make(chan string, 1), gone: make(chan struct{})}
	select {
	case a.questions <- tq:
	case <-ctx.Done():
		return tools.Answer{}, ctx.Err()
	}
	select {
	case line := <-tq.line:
		return parseAnswer(line), nil
	case <-tq.gone:
		return tools.Answer{}, tools.ErrNoOneToAnswer
	case <-ctx.Done():
		return tools.Answer{}, ctx.Err()
	}
}

// askPrompt ends a permission question; the person's line answers it.
const askPrompt = "allow? y once · a for this session · or type why not: "

// show writes the question to w.
func (tq *termQuestion) show(w io.Writer) {
	who := tq.q.Caller.Role()
	fmt.Fprintf(w, "\npermission needed: %s wants %s %s (%s)\n%s", who, tq.q.Tool, questionArgs(tq.q), tq.q.Cause, askPrompt)
}

// questionArgs shows what a call would do: the command, the path, the URL,
// or the arguments.
func questionArgs(q tools.Question) string {
	for _, k := range []string{"command", "path", "url", "agent"} {
		if s, ok := q.Args[k].(string); ok && s != "" {
			return strconv.Quote(s)
		}
	}
	var parts []string
	for k, v := range q.Args {
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	return strings.Join(parts, " ")
}

// parseAnswer reads the person's line: y or yes allows once, a (always,
// session) allows for the session, n or no denies, and anything else
// denies with the line as the reason the model reads ("n: use make"
// gives "use make").
func parseAnswer(line string) tools.Answer {
	line = strings.TrimSpace(line)
	word, rest, _ := strings.Cut(line, " ")
	switch strings.ToLower(strings.TrimRight(word, ":,.")) {
	case "y", "yes":
		if rest == "" {
			return tools.Answer{Allow: true, By: "the person asked"}
		}
	case "a", "always", "session":
		if rest == "" {
			return tools.Answer{Allow: true, Session: true, By: "the person asked"}
		}
	case "n", "no":
		if i := strings.IndexAny(line, " :"); i >= 0 {
			return tools.Answer{By: "the person asked", Reason: strings.TrimSpace(strings.TrimLeft(line[i:], " :"))}
		}
		return tools.Answer{By: "the person asked"}
	}
	return tools.Answer{By: "the person asked", Reason: line}
}

var _ tools.Asker = (*termAsker)(nil)
