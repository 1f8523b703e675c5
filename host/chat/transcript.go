package chat

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/safefile"
	"github.com/weavehq/weave/internal/textcap"
	"github.com/weavehq/weave/plugins"
)

// SessionLine is one line of a session's transcript,
// .weave/sessions/<id>.jsonl: a message (the person's, the model's with its
// tool calls, or a tool result), the token use of one model call, or a
// compaction. Every agent of the session writes to it, delegated ones
// included, each line naming its agent.
type SessionLine struct {
	Time time.Time `json:"time"`
	// Type is "message", "usage", "conversation", which starts a new
	// conversation of its agent (a later delegation to the same role),
	// "compaction", "review" (a reviewer's verdict), "fallback" (the
	// call moved to another model), or "parent".
	//
	// A delegated session starts with a "parent" line: Parent names the
	// session that delegated and Agent the agent that did.
	Type    string               `json:"type"`
	Agent   string               `json:"agent"`
	Parent  string               `json:"parent,omitempty"`
	Message *plugins.ChatMessage `json:"message,omitempty"`
	// Child is set on the result of a task call: the session the
	// delegated agent worked in.
	Child string         `json:"child,omitempty"`
	Usage *plugins.Usage `json:"usage,omitempty"`
	Model string         `json:"model,omitempty"`
	// CostUSD is what a usage line's call cost in US dollars; absent when
	// its model's price was unknown.
	CostUSD *float64 `json:"cost_usd,omitempty"`

	// A compaction line carries the summary the model wrote, the message
	// that replaces the first Covered messages of the conversation (as it
	// stood: after any earlier compaction) in Message, the summary call's
	// Usage, and the conversation's size before and after. The messages it
	// replaces stay in the file above it.
	Summary      string `json:"summary,omitempty"`
	Covered      int    `json:"covered,omitempty"`
	Trigger      string `json:"trigger,omitempty"`
	TokensBefore int64  `json:"tokens_before,omitempty"`
	TokensAfter  int64  `json:"tokens_after,omitempty"`
	// Review is a reviewer's verdict on a plan's work (type "review").
	Review *ReviewLine `json:"review,omitempty"`
	// Fallback is a switch to the next model of a fallback chain (type
	// "fallback").
	Fallback *Fallback `json:"fallback,omitempty"`
}

// Session line types.
const (
	lineMessage      = "message"
	lineUsage        = "usage"
	lineConversation = "conversation"
	lineParent       = "parent"
	lineCompaction   = "compaction"
)

// sessionLog appends model calls to their session's transcript. It writes
// what the model saw and said, never credentials.
type sessionLog struct {
	dir string
	// inside opens the transcripts: regular files inside the project only.
	inside safefile.Inside

	mu sync.Mutex
	// written counts the messages of each agent's conversation already on
	// file, by session and agent.
	written map[[2]string]int
	// children names the session each delegating tool call started, by
	// session and call id, until its result is on file.
	children map[[2]string]string
}

func newSessionLog(project string) *sessionLog {
	if project == "" {
		return nil
	}
	return &sessionLog{dir: layout.NewProject(project).Sessions(), inside: safefile.Inside{Root: project},
		written: map[[2]string]int{}, children: map[[2]string]string{}}
}

var sessionIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// record appends the request's messages not yet on file, the answer and
// its usage.
func (l *sessionLog) record(session, agent string, req plugins.ChatRequest, resp plugins.ChatResponse, cost *float64) error {
	answer, u := resp.Message, resp.Usage
	return l.write(session, agent, req.Messages, &answer, &u, resp.Model, cost)
}

// recordCut appends the messages of a call that was cut off (the person
// interrupted it) and the text the model had written by then, so that the
// turn is on file to resume.
func (l *sessionLog) recordCut(session, agent string, msgs []plugins.ChatMessage, partial string) error {
	var answer *plugins.ChatMessage
	if partial != "" {
		answer = &plugins.ChatMessage{Role: plugins.RoleAssistant, Content: partial}
	}
	return l.write(session, agent, msgs, answer, nil, "", nil)
}

func (l *sessionLog) write(session, agent string, msgs []plugins.ChatMessage, answer *plugins.ChatMessage, u *plugins.Usage, model string, cost *float64) error {
	if l == nil || session == "" {
		return nil
	}
	if !sessionIDRE.MatchString(session) {
		return fmt.Errorf("session id %q is not a plain name", session)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	key := [2]string{session, agent}
	from := l.written[key]
	if from > len(msgs) {
		// A shorter chat is a new conversation of the same agent (a second
		// delegation in one session).
		from = 0
	}
	now := time.Now().UTC()
	var lines []SessionLine
	if from == 0 {
		lines = append(lines, SessionLine{Time: now, Type: lineConversation, Agent: agent})
	}
	for i := from; i < len(msgs); i++ {
		m := msgs[i]
		line := SessionLine{Time: now, Type: lineMessage, Agent: agent, Message: &m}
		if m.Role == plugins.RoleTool && m.ToolCallID != "" {
			ck := [2]string{session, m.ToolCallID}
			line.Child = l.children[ck]
			delete(l.children, ck)
		}
		lines = append(lines, line)
	}
	n := len(msgs)
	if answer != nil {
		lines = append(lines, SessionLine{Time: now, Type: lineMessage, Agent: agent, Message: answer, Model: model})
		n++
	}
	if u != nil {
		lines = append(lines, SessionLine{Time: now, Type: lineUsage, Agent: agent, Usage: u, Model: model, CostUSD: cost})
	}
	l.written[key] = n
	return l.append(session, lines)
}

// link starts the transcript of child, a session delegated from parent by
// agent's tool call callID: its first line names them, and the call's
// result in parent's transcript will name child.
func (l *sessionLog) link(parent, child, agent, callID string) error {
	if l == nil || parent == "" || child == "" {
		return nil
	}
	if !sessionIDRE.MatchString(child) {
		return fmt.Errorf("session id %q is not a plain name", child)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if callID != "" {
		l.children[[2]string{parent, callID}] = child
	}
	return l.append(child, []SessionLine{{Time: time.Now().UTC(), Type: lineParent, Agent: agent, Parent: parent}})
}

// append writes lines to session's transcript; l.mu is held.
func (l *sessionLog) append(session string, lines []SessionLine) error {
	if err := l.inside.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	// Only a regular file inside the project is appended to: a transcript
	// linked out of it, or a named pipe in its place, is refused.
	f, err := l.inside.OpenFile(filepath.Join(l.dir, session+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	var buf []byte
	for _, line := range lines {
		b, err := encodeLine(line)
		if err != nil {
			_ = f.Close()
			return fmt.Errorf("session %s: %w", session, err)
		}
		buf = append(buf, b...)
	}
	// One write for the call's lines, so that a crash tears at most the
	// last of them.
	if _, err := f.Write(buf); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// encodeLine is line as the transcript holds it: JSON and a newline, in
// fewer than maxSessionLine bytes, so that every line written is read back.
// A line that would be longer (a huge answer, a tool result full of
// characters JSON escapes six-fold) has its long texts cut, their start and
// end kept with a note saying how much was cut, more tightly until it fits.
func encodeLine(line SessionLine) ([]byte, error) {
	b, err := json.Marshal(line)
	if err != nil {
		return nil, err
	}
	if len(b) < maxSessionLine {
		return append(b, '\n'), nil
	}
	full := len(b)
	// A budget of a sixth of the line leaves room for JSON's worst
	// escaping (\u0000 for one byte) of one text.
	for _, budget := range []int{maxSessionLine / 8, maxSessionLine / 64, 4 << 10, 256} {
		b, err = json.Marshal(shortened(line, budget))
		if err != nil {
			return nil, err
		}
		if len(b) < maxSessionLine {
			return append(b, '\n'), nil
		}
	}
	return nil, fmt.Errorf("a transcript line of %d bytes does not fit in %d bytes even with its texts cut", full, maxSessionLine)
}

// shortened is line with each text longer than budget bytes cut to it, head
// and tail kept: the message's content, each tool call's arguments (then
// kept as {"cut": "<their JSON, cut>"}) and a compaction's summary.
func shortened(line SessionLine, budget int) SessionLine {
	if line.Message != nil {
		m := *line.Message
		m.Content = textcap.HeadTail(m.Content, budget, "message")
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for i, c := range m.ToolCalls {
			raw, err := json.Marshal(c.Args)
			if err == nil && len(raw) <= budget {
				continue
			}
			m.ToolCalls[i].Args = map[string]any{"cut": textcap.HeadTail(string(raw), budget, "tool call's arguments")}
		}
		line.Message = &m
	}
	line.Summary = textcap.HeadTail(line.Summary, budget, "summary")
	return line
}

// compaction appends a compaction of agent's conversation: summary, the
// message msg that replaces the first info.Messages messages, and the
// summary call's usage.
func (l *sessionLog) compaction(session, agent, summary string, msg plugins.ChatMessage, info Compaction, resp plugins.ChatResponse) error {
	if l == nil || session == "" {
		return nil
	}
	if !sessionIDRE.MatchString(session) {
		return fmt.Errorf("session id %q is not a plain name", session)
	}
	u := resp.Usage
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.append(session, []SessionLine{{Time: time.Now().UTC(), Type: lineCompaction, Agent: agent, Message: &msg,
		Usage: &u, Model: resp.Model, Summary: summary, Covered: info.Messages, Trigger: info.Trigger,
		TokensBefore: info.TokensBefore, TokensAfter: info.TokensAfter}})
}

// rebase says agent's next message list in session starts with the n
// messages history gave it, which are on file.
func (l *sessionLog) rebase(session, agent string, n int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.written[[2]string{session, agent}] = n
	l.mu.Unlock()
}

// history reads agent's last conversation in session back from its
// transcript, each compaction's summary in place of what it covers: what a
// resumed chat continues. A session with no transcript has no history.
func (l *sessionLog) history(session, agent string) ([]plugins.ChatMessage, error) {
	if l == nil || session == "" {
		return nil, nil
	}
	if !sessionIDRE.MatchString(session) {
		return nil, fmt.Errorf("session id %q is not a plain name", session)
	}
	f, err := l.inside.Open(filepath.Join(l.dir, session+".jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var msgs []plugins.ChatMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxSessionLine)
	for sc.Scan() {
		var line SessionLine
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Agent != agent {
			// A torn last line (the process died mid-write) is skipped.
			continue
		}
		switch line.Type {
		case lineConversation:
			msgs = msgs[:0]
		case lineMessage:
			if line.Message != nil {
				msgs = append(msgs, *line.Message)
			}
		case lineCompaction:
			if line.Message != nil {
				// The summary replaces the messages it covers, in place.
				rest := msgs[min(max(line.Covered, 0), len(msgs)):]
				msgs = append(append(make([]plugins.ChatMessage, 0, len(rest)+1), *line.Message), rest...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read session %s: %w", session, err)
	}
	l.mu.Lock()
	l.written[[2]string{session, agent}] = len(msgs)
	l.mu.Unlock()
	return msgs, nil
}

// maxSessionLine bounds one transcript line, newline included, for the
// writer (encodeLine) and every reader alike: what is written is read.
const maxSessionLine = 16 << 20

// ReviewLine is one verdict as the transcript keeps it: the plan, the
// commit the reviewed change starts from, and the review.
type ReviewLine struct {
	Plan  string `json:"plan"`
	Since string `json:"since,omitempty"`
	agents.Review
}

// recordReview appends a reviewer's verdict on plan's work to session's
// transcript.
func (l *sessionLog) recordReview(session, plan, since string, rv agents.Review) error {
	if l == nil || session == "" {
		return nil
	}
	if !sessionIDRE.MatchString(session) {
		return fmt.Errorf("session id %q is not a plain name", session)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.append(session, []SessionLine{{Time: time.Now().UTC(), Type: "review", Agent: rv.Reviewer,
		Review: &ReviewLine{Plan: plan, Since: since, Review: rv}}})
}

// RecordReview appends a reviewer's verdict on plan's work to session's
// transcript.
func (d *Door) RecordReview(session, plan, since string, rv agents.Review) error {
	return d.sessions.recordReview(session, plan, since, rv)
}
