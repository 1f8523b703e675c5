package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
)

// permissionAsker asks whether a tool call that a rule marks "ask" may
// run. It always decides: a question no one answers is a deny that says
// why.
type permissionAsker interface {
	askPermission(ctx context.Context, q permissionQuestion) permissionAnswer
}

// permissionQuestion is a tool call waiting for a person.
type permissionQuestion struct {
	// Agent makes the call; Tool and Args are the call.
	Agent, Tool, Args string
	// Rule is the rule that asks, as written ("Bash(git push:*)").
	Rule string
}

// permissionDecision is the person's answer.
type permissionDecision int

const (
	// denyCall refuses the call; the reason reaches the model.
	denyCall permissionDecision = iota
	// allowOnce lets this call run.
	allowOnce
	// allowSession lets this call and calls matching the same rule run
	// for the rest of the session.
	allowSession
)

func (d permissionDecision) String() string {
	switch d {
	case allowOnce:
		return "allow once"
	case allowSession:
		return "allow for this session"
	}
	return "deny"
}

// permissionAnswer is a decision, and for a deny the reason to give the
// model ("" when the person gave none).
type permissionAnswer struct {
	Decision permissionDecision
	Reason   string
}

// nobodyToAsk is the asker where no person can answer (chat -p, a run
// without a terminal): every question is a deny naming the rule.
type nobodyToAsk struct{}

func (nobodyToAsk) askPermission(_ context.Context, q permissionQuestion) permissionAnswer {
	return permissionAnswer{Decision: denyCall, Reason: fmt.Sprintf("denied: rule %s asks a person first, and no one is here to answer", q.Rule)}
}

// personAsker asks the person at the chat, in the chat's own input, one
// question at a time.
type personAsker struct {
	in     chatInput
	errOut io.Writer
	// quiet stops what would draw over the question (the spinner).
	quiet func()

	mu sync.Mutex
}

// permissionChoices is the question's prompt.
const permissionChoices = "allow? y = once, a = for this session, n = deny: "

func (a *personAsker) askPermission(ctx context.Context, q permissionQuestion) permissionAnswer {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.quiet != nil {
		a.quiet()
	}
	call := q.Tool
	if q.Args != "" {
		call += " " + q.Args
	}
	fmt.Fprintf(a.errOut, "\n%s wants to run %s\n  (rule %s asks you first)\n", q.Agent, call, q.Rule)
	for {
		ans, err := a.in.question(ctx, permissionChoices)
		if err != nil {
			return permissionAnswer{Decision: denyCall, Reason: "denied: the person did not answer"}
		}
		switch strings.ToLower(strings.TrimSpace(ans)) {
		case "y", "yes":
			return permissionAnswer{Decision: allowOnce}
		case "a", "always":
			return permissionAnswer{Decision: allowSession}
		case "n", "no":
			reason, err := a.in.question(ctx, "why (sent to the agent; Enter for no reason): ")
			if err != nil {
				reason = ""
			}
			return permissionAnswer{Decision: denyCall, Reason: strings.TrimSpace(reason)}
		}
		fmt.Fprintln(a.errOut, "answer y, a or n")
	}
}
