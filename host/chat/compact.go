package chat

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"
	"time"

	"github.com/weavehq/weave/agents"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/plugins"
)

// Compaction, in the model door: when an agent's conversation nears the
// model's context window, the host has the model summarise its earlier part
// and, from then on, sends the summary in place of that part. Agents keep
// their own message lists and send the whole list with every call (a
// third-party agent plugin included); the host remembers, per session and
// agent, which prefix of that list the summary replaces, and checks on each
// call that the list still starts with it.
//
// A compaction happens:
//   - before the next call, after an answer whose tokens reach the
//     context-window monitor's compact ratio (context_window.compact_ratio);
//   - when the provider answers that the chat is too long for its window:
//     the host compacts and retries the call once;
//   - on demand, Door.Compact (the chat's /compact).
//
// Each fires session.compacting (hooks may block it or add instructions for
// the summary) and session.compacted, appends a "compaction" line to the
// session's transcript (which keeps every message), publishes an ANCHOR on
// loop:anchor when there is a bus, and streams a model.compacted event.

// ModelCompacting says an agent's conversation is being compacted: the
// model is writing the summary (Compaction has the trigger, the reason, the
// messages covered and the tokens before). ModelCompacted follows when it
// is done, with the whole Compaction.
const (
	ModelCompacting = "model.compacting"
	ModelCompacted  = "model.compacted"
)

// Compaction triggers, as Claude Code's PreCompact hooks know them.
const (
	CompactAuto   = "auto"
	CompactManual = "manual"
)

// What asked for a compaction.
const (
	reasonRatio          = "ratio"
	reasonContextTooLong = "context_too_long"
	reasonRequested      = "requested"
)

// Compaction describes one compaction on a model.compacted event.
type Compaction struct {
	// Trigger is "auto" or "manual"; Reason says what asked for it:
	// "ratio" (the compact ratio was reached), "context_too_long" (the
	// provider refused the call) or "requested".
	Trigger string `json:"trigger"`
	Reason  string `json:"reason"`
	// Messages is how many messages the summary replaced.
	Messages int `json:"messages"`
	// TokensBefore is the conversation's size before (the last call's
	// tokens when known), TokensAfter the estimated size after.
	TokensBefore int64 `json:"tokens_before"`
	TokensAfter  int64 `json:"tokens_after"`
}

// StartLine is the one line a person reads while a compaction runs.
func (c Compaction) StartLine() string {
	return fmt.Sprintf("compacting the conversation: summarising %d messages (%s tokens)…", c.Messages, kTokens(c.TokensBefore))
}

// Line is the one line a person reads about a compaction.
func (c Compaction) Line() string {
	return fmt.Sprintf("context compacted: %s → %s tokens", kTokens(c.TokensBefore), kTokens(c.TokensAfter))
}

func kTokens(n int64) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%dk", (n+500)/1000)
}

//go:embed compact_prompt.md
var compactPrompt string

// The words around a summary, for the model.
const (
	summaryIntro = "This conversation was compacted: its earlier part was replaced by the summary below. The messages after this one are the most recent part, as they were."
	summaryCarry = "Carry on from where the conversation stands. Do not restart the work and do not repeat steps the summary records as done."
)

const (
	// maxThreads bounds the conversations of one agent in one session the
	// host follows at once (parallel delegations to one role).
	maxThreads = 4
	// maxTailTokens bounds the recent messages kept as they were.
	maxTailTokens = 20000
	// renderMessageCap bounds one message as the summariser reads it.
	renderMessageCap = 4000
)

// errNothingToCompact says a conversation has no earlier part to summarise.
var errNothingToCompact = errors.New("nothing to compact yet: the conversation has no earlier turn to summarise")

// conversation is an agent's conversation in a session, as the model
// service follows it.
type conversation struct {
	// msgs is the conversation as the model last saw it (the summary and
	// the recent messages after a compaction) with the model's answer:
	// what the next Ask continues.
	msgs []plugins.ChatMessage
	// threads are the message lists the agent is sending: usually one.
	threads []*thread
	// busy counts the calls under way.
	busy int
	// used is the last answer's token count.
	used int64
	// model, system and tools are the last call's, for a compaction
	// between calls.
	model  string
	system string
	tools  []plugins.ToolSpec

	// compacting serialises this conversation's compactions.
	compacting chan struct{}
}

func newConversation() *conversation {
	return &conversation{compacting: make(chan struct{}, 1)}
}

// lock takes the conversation's compaction lock, or fails with ctx.
func (c *conversation) lock(ctx context.Context) error {
	select {
	case c.compacting <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *conversation) unlock() { <-c.compacting }

// thread is one message list an agent sends, known by its first message.
type thread struct {
	head uint64
	// cut is how many messages at the start of the list the summary
	// replaces (0: none), cutFP the fingerprint of the messages on either
	// side of the cut, which the list must still hold.
	cut     int
	cutFP   uint64
	summary plugins.ChatMessage
	// due asks for a compaction before the next call, for this reason
	// ("ratio" or "requested"); "" when none is.
	due string
}

// threadFor finds (or starts) the thread of list. Call with m.mu held.
func (c *conversation) threadFor(list []plugins.ChatMessage) *thread {
	var head uint64
	if len(list) > 0 {
		head = fingerprint(list[0])
	}
	for _, t := range c.threads {
		if t.head == head {
			return t
		}
	}
	t := &thread{head: head}
	c.threads = append(c.threads, t)
	if len(c.threads) > maxThreads {
		c.threads = append(c.threads[:0:0], c.threads[1:]...)
	}
	return t
}

// valid reports whether list still starts with the prefix t's summary
// replaces; a list that does not (the agent began again) drops it. Call
// with m.mu held.
func (t *thread) valid(list []plugins.ChatMessage) bool {
	if t.cut == 0 {
		return false
	}
	if t.cut >= len(list) || fingerprint(list[t.cut-1], list[t.cut]) != t.cutFP {
		t.cut, t.summary = 0, plugins.ChatMessage{}
		return false
	}
	return true
}

// effective is list as the model gets it: the summary in place of the
// prefix it replaces. Call with m.mu held.
func (t *thread) effective(list []plugins.ChatMessage) []plugins.ChatMessage {
	if !t.valid(list) {
		return list
	}
	out := make([]plugins.ChatMessage, 0, len(list)-t.cut+1)
	return append(append(out, t.summary), list[t.cut:]...)
}

// fingerprint hashes messages: role, text, tool calls and result ids.
func fingerprint(msgs ...plugins.ChatMessage) uint64 {
	h := fnv.New64a()
	for _, m := range msgs {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%t\x00", m.Role, m.Content, m.ToolCallID, m.IsError)
		for _, c := range m.ToolCalls {
			args, _ := json.Marshal(c.Args)
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00", c.ID, c.Tool, args)
		}
		h.Write([]byte{0xff})
	}
	return h.Sum64()
}

// estimateTokens is a rough count of what messages cost: four characters
// a token, as providers' tokenizers average on English and code.
func estimateTokens(system string, msgs []plugins.ChatMessage, tools []plugins.ToolSpec) int64 {
	n := len(system)
	for _, m := range msgs {
		n += messageSize(m)
	}
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return int64(n/4 + 1)
}

func messageSize(m plugins.ChatMessage) int {
	n := len(m.Content) + 16
	for _, c := range m.ToolCalls {
		args, _ := json.Marshal(c.Args)
		n += len(c.Tool) + len(args) + 16
	}
	return n
}

// chooseCut picks where a compaction cuts list: before an assistant
// message after from (so a tool call stays with its results, and the
// summary, a user message, is followed by the model's turn), keeping as
// many recent messages as fit in budget tokens, and at least the last
// assistant message and what follows it. It returns 0 when there is no
// such place.
func chooseCut(list []plugins.ChatMessage, from int, budget int64) int {
	best := 0
	var tail int64
	for i := len(list) - 1; i > from; i-- {
		tail += int64(messageSize(list[i])/4 + 1)
		if list[i].Role != plugins.RoleAssistant {
			continue
		}
		if best != 0 && tail > budget {
			break
		}
		best = i
	}
	return best
}

// tailBudget is how many tokens of recent messages a compaction of
// agent's conversation in session, with the model name, keeps.
func (d *Door) tailBudget(session, agent, name string) int64 {
	return min(int64(d.windowOf(session, agent, name))/5, maxTailTokens)
}

// compactJob is one compaction to run.
type compactJob struct {
	session, agent  string
	model, system   string
	tools           []plugins.ToolSpec
	trigger, reason string
	// covered are the messages (as the model saw them) the summary
	// replaces; tail the messages kept after it.
	covered, tail []plugins.ChatMessage
	before        int64
	instructions  string
}

// compactThread compacts the thread of list before a call. Call with the
// conversation's compaction lock held.
func (d *Door) compactThread(ctx context.Context, c *conversation, t *thread, list []plugins.ChatMessage, req plugins.ChatRequest, job compactJob) error {
	d.mu.Lock()
	from := 0
	if t.valid(list) {
		from = t.cut
	}
	eff := t.effective(list)
	d.mu.Unlock()
	cut := chooseCut(list, from, d.tailBudget(job.session, job.agent, req.Model))
	if cut == 0 {
		return errNothingToCompact
	}
	// eff[:k] is list[:cut] as the model saw it.
	k := cut
	if from > 0 {
		k = cut - from + 1
	}
	job.covered, job.tail = eff[:k], list[cut:]
	job.model, job.system, job.tools = req.Model, req.System, req.Tools
	if job.before == 0 {
		job.before = estimateTokens(req.System, eff, req.Tools)
	}
	return d.runCompaction(ctx, job, func(msg plugins.ChatMessage) {
		d.mu.Lock()
		defer d.mu.Unlock()
		t.cut, t.cutFP, t.summary, t.due = cut, fingerprint(list[cut-1], list[cut]), msg, ""
	})
}

// compact compacts agent's conversation in session between calls: the one
// the next Ask continues. When a call of it is under way, the compaction
// happens before that agent's next model call instead.
func (d *Door) compact(ctx context.Context, session, agent, instructions string) error {
	key := [2]string{session, agent}
	d.mu.Lock()
	c := d.convs[key]
	if c == nil {
		// Kept only if it compacts: a conversation from the transcript.
		c = newConversation()
	}
	if c.busy > 0 {
		for _, t := range c.threads {
			t.due = reasonRequested
		}
		d.mu.Unlock()
		return nil
	}
	name := c.model
	d.mu.Unlock()
	if r := d.set.Route(name); r.Err != nil {
		return r.Err
	}
	if err := c.lock(ctx); err != nil {
		return err
	}
	defer c.unlock()
	d.mu.Lock()
	msgs := c.msgs
	job := compactJob{session: session, agent: agent, model: c.model, system: c.system, tools: c.tools,
		trigger: CompactManual, reason: reasonRequested, before: c.used, instructions: instructions}
	d.mu.Unlock()
	if msgs == nil {
		var err error
		if msgs, err = d.sessions.history(session, agent); err != nil {
			return err
		}
	}
	if len(msgs) == 0 {
		return fmt.Errorf("%s has no conversation in session %s to compact", agent, session)
	}
	// Asked for, a compaction keeps only the last answer as it was.
	cut := chooseCut(msgs, 0, 0)
	if cut == 0 {
		return errNothingToCompact
	}
	job.covered, job.tail = msgs[:cut], msgs[cut:]
	if job.before == 0 {
		job.before = estimateTokens(job.system, msgs, job.tools)
	}
	return d.runCompaction(ctx, job, func(msg plugins.ChatMessage) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.convs[key] == nil {
			d.convs[key] = c
		}
		c.msgs = append([]plugins.ChatMessage{msg}, msgs[cut:]...)
		// The agent's next list starts with what history gives it.
		c.threads = nil
		d.sessions.rebase(session, agent, len(c.msgs))
	})
}

// runCompaction fires session.compacting, has the model write the summary,
// calls apply with the message that replaces job.covered, writes the
// transcript line, fires session.compacted, publishes the ANCHOR and
// streams model.compacted.
func (d *Door) runCompaction(ctx context.Context, job compactJob, apply func(plugins.ChatMessage)) error {
	ev := plugins.Event{Name: plugins.EventSessionCompacting, SessionID: job.session, Agent: job.agent, Cwd: d.project, Time: time.Now(),
		Data: map[string]any{"trigger": job.trigger, "reason": job.reason, "messages": len(job.covered),
			"tokens_used": job.before, "context_window": d.windowOf(job.session, job.agent, job.model), "custom_instructions": job.instructions}}
	if p := d.sessions.path(job.session); p != "" {
		ev.Data["transcript_path"] = p
	}
	out, err := d.fire(ctx, ev)
	if err != nil {
		return err
	}
	if out.Blocked() {
		return fmt.Errorf("compaction blocked by a hook: %s", out.Reason)
	}
	instructions := strings.TrimSpace(strings.Join(append([]string{job.instructions}, out.Context...), "\n\n"))

	// Writing the summary takes a model call: say so while it runs.
	d.emit(ctx, Event{Type: ModelCompacting, Session: job.session, Agent: job.agent, ContextWindow: d.windowOf(job.session, job.agent, job.model),
		Compaction: &Compaction{Trigger: job.trigger, Reason: job.reason, Messages: len(job.covered), TokensBefore: job.before}})
	resp, err := d.walk(ctx, job.session, job.agent, plugins.ChatRequest{
		Model:    job.model,
		System:   compactPrompt,
		Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: summaryRequest(job.covered, instructions, d.renderBudget(job.session, job.agent, job.model))}},
	}, nil, nil)
	if err != nil {
		return fmt.Errorf("summarise the conversation: %w", err)
	}
	summary := strings.TrimSpace(resp.Message.Content)
	if summary == "" {
		return errors.New("summarise the conversation: the model answered with no summary")
	}
	var snap PlanSnapshot
	if d.plans != nil {
		snap = d.plans(job.session)
	}
	msg := plugins.ChatMessage{Role: plugins.RoleUser, Content: summaryMessage(summary, snap)}
	apply(msg)

	info := Compaction{Trigger: job.trigger, Reason: job.reason, Messages: len(job.covered), TokensBefore: job.before,
		TokensAfter: estimateTokens(job.system, append([]plugins.ChatMessage{msg}, job.tail...), job.tools)}
	if err := d.sessions.compaction(job.session, job.agent, summary, msg, info, resp); err != nil {
		d.logger.Warn("write the compaction to the session transcript", "session", job.session, "err", err)
	}
	done := ev
	done.Name, done.Time = plugins.EventSessionCompacted, time.Now()
	done.Data = map[string]any{"trigger": job.trigger, "reason": job.reason, "messages": info.Messages,
		"tokens_before": info.TokensBefore, "tokens_after": info.TokensAfter, "summary": summary}
	if p, ok := ev.Data["transcript_path"]; ok {
		done.Data["transcript_path"] = p
	}
	if _, err := d.fire(ctx, done); err != nil {
		d.logger.Warn("session.compacted hooks failed", "err", err)
	}
	d.anchor(ctx, job, snap)
	u := resp.Usage
	cost := d.priceFor(job.model).cost(job.model, resp).ptr()
	d.emit(ctx, Event{Type: ModelCompacted, Session: job.session, Agent: job.agent, Usage: &u, ContextWindow: d.windowOf(job.session, job.agent, job.model), Compaction: &info, CostUSD: cost})
	d.logger.Info("conversation compacted", "session", job.session, "agent", job.agent, "trigger", job.trigger, "reason", job.reason,
		"messages", info.Messages, "tokens_before", info.TokensBefore, "tokens_after", info.TokensAfter)
	return nil
}

// renderBudget bounds, in characters, the conversation the summariser
// (agent's model in session) reads: about half its window, so that the
// request fits.
func (d *Door) renderBudget(session, agent, name string) int {
	return max(d.windowOf(session, agent, name)*2, 8000)
}

// summaryRequest is the summariser's one message: the conversation as
// text (a long message shortened in its middle; past budget, the oldest
// messages after the first left out) and the instructions hooks or the
// person gave.
func summaryRequest(msgs []plugins.ChatMessage, instructions string, budget int) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = renderMessage(m)
	}
	// Keep the first message (an earlier summary, or the request) and as
	// many of the latest as fit.
	keepFrom, total := len(parts), len(parts[0])
	for keepFrom > 1 && total+len(parts[keepFrom-1]) <= budget {
		keepFrom--
		total += len(parts[keepFrom])
	}
	var b strings.Builder
	b.WriteString("Summarise the conversation below as your instructions say.\n\n<conversation>\n")
	b.WriteString(parts[0])
	if keepFrom > 1 {
		fmt.Fprintf(&b, "[… %d messages left out for length …]\n\n", keepFrom-1)
	}
	for _, p := range parts[max(keepFrom, 1):] {
		b.WriteString(p)
	}
	b.WriteString("</conversation>\n")
	if instructions != "" {
		fmt.Fprintf(&b, "\nAlso follow these instructions for this summary:\n%s\n", instructions)
	}
	return b.String()
}

func renderMessage(m plugins.ChatMessage) string {
	var b strings.Builder
	switch m.Role {
	case plugins.RoleTool:
		status := ""
		if m.IsError {
			status = ", failed"
		}
		fmt.Fprintf(&b, "[tool result %s%s]\n", m.ToolCallID, status)
	default:
		fmt.Fprintf(&b, "[%s]\n", m.Role)
	}
	if m.Content != "" {
		b.WriteString(shorten(m.Content, renderMessageCap))
		b.WriteString("\n")
	}
	for _, c := range m.ToolCalls {
		args, _ := json.Marshal(c.Args)
		fmt.Fprintf(&b, "→ calls %s %s (id %s)\n", c.Tool, shorten(string(args), renderMessageCap/2), c.ID)
	}
	b.WriteString("\n")
	return b.String()
}

// shorten cuts s to about n bytes, keeping its start and its end.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*3/4, n/4
	for head > 0 && !validStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !validStart(s[start]) {
		start++
	}
	return fmt.Sprintf("%s\n[… %d characters left out …]\n%s", s[:head], start-head, s[start:])
}

// validStart reports whether b can begin a UTF-8 character.
func validStart(b byte) bool { return b&0xC0 != 0x80 }

// PlanSnapshot is what the host knows of the work in a session, which a
// compaction's summary and its ANCHOR carry: the active plan's progress
// (nil: none) and the session's checklist.
type PlanSnapshot struct {
	Plan  *plugins.PlanProgress
	Todos []plugins.PlanTask
}

// next is the plan's first unchecked task.
func (s PlanSnapshot) next() (plugins.PlanTask, bool) {
	if s.Plan == nil {
		return plugins.PlanTask{}, false
	}
	for _, t := range s.Plan.Tasks {
		if !t.Done {
			return t, true
		}
	}
	return plugins.PlanTask{}, false
}

// summaryMessage is the user message that replaces a compacted prefix.
func summaryMessage(summary string, snap PlanSnapshot) string {
	var b strings.Builder
	b.WriteString(summaryIntro)
	b.WriteString("\n\n<summary>\n")
	b.WriteString(summary)
	b.WriteString("\n</summary>\n")
	if snap.Plan != nil || len(snap.Todos) > 0 {
		b.WriteString("\n<work-state>\n")
		if p := snap.Plan; p != nil {
			fmt.Fprintf(&b, "Active plan %q: %d of %d tasks done.", p.Plan, p.Done, p.Total)
			if t, ok := snap.next(); ok {
				fmt.Fprintf(&b, " Next unchecked task: %d. %s", t.Number, t.Title)
			} else {
				b.WriteString(" Every task is checked.")
			}
			b.WriteString("\n")
		}
		if len(snap.Todos) > 0 {
			b.WriteString("Checklist:\n")
			for _, t := range snap.Todos {
				mark := " "
				if t.Done {
					mark = "x"
				}
				fmt.Fprintf(&b, "- [%s] %s\n", mark, t.Title)
			}
		}
		b.WriteString("</work-state>\n")
	}
	b.WriteString("\n")
	b.WriteString(summaryCarry)
	return b.String()
}

// anchor publishes the compaction's recovery snapshot on loop:anchor.
func (d *Door) anchor(ctx context.Context, job compactJob, snap PlanSnapshot) {
	if d.bus == nil {
		return
	}
	goal := fmt.Sprintf("Session %s: %s's conversation", job.session, job.agent)
	done, total := 1, 1
	next := fmt.Sprintf("Continue %s's conversation in session %s from its summary", job.agent, job.session)
	if p := snap.Plan; p != nil && p.Total > 0 {
		done, total = p.Done, p.Total
		goal = "Plan " + p.Plan
		if t, ok := snap.next(); ok {
			goal += fmt.Sprintf(", task %d: %s", t.Number, t.Title)
			next = fmt.Sprintf("Continue task %d of plan %s (%s) from the summary", t.Number, p.Plan, t.Title)
		} else {
			next = "Plan " + p.Plan + " has every task checked; finish the conversation from the summary"
		}
	}
	if err := run.PublishAnchor(ctx, d.bus, run.NewAnchor(d.project, goal, done, total, next, time.Now())); err != nil {
		d.logger.Warn("compaction anchor not published", "err", err)
	}
}

// Compact summarises agent's conversation in session now (the chat's
// /compact): the next call in that session continues from the summary and
// the latest messages. Between calls it compacts the conversation as of
// the agent's last answer; while the agent is answering, before its next
// model call.
func (d *Door) Compact(ctx context.Context, session, agent string) error {
	if r, ok := agents.RoleByName(agent); ok {
		agent = r.Name
	}
	if err := d.compact(ctx, session, agent, ""); err != nil {
		return fmt.Errorf("compact %s's conversation in session %s: %w", agent, session, err)
	}
	return nil
}

// path is session's transcript file; "" when there is none.
func (l *sessionLog) path(session string) string {
	if l == nil || !sessionIDRE.MatchString(session) {
		return ""
	}
	return filepath.Join(l.dir, session+".jsonl")
}
