package envagents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/weavehq/weave/bus/envelope"
	"github.com/weavehq/weave/plugins"
)

// Host is what an agent in a session needs of Weave's host (host.Host has
// both): a turn of role in a Weave session, and compaction.
type Host interface {
	Ask(ctx context.Context, role, session, prompt string) (plugins.AgentResponse, error)
	Compact(ctx context.Context, session, agent string) error
}

// MaxConversations bounds the conversations one agent keeps in a session
// (each holds a queue and its history in the host), so peers that open
// conversation after conversation cannot grow it without end. An action
// that would open one more ends "rejected".
const MaxConversations = 256

// ReviewRole is the role "review" asks.
const ReviewRole = "weft"

// Join adds role to the envelope session session on the bus socket at
// socket and serves it until ctx ends or the connection closes. ready, when
// not nil, is called once the agent has joined.
func Join(ctx context.Context, socket, session, role string, h Host, ready func()) error {
	c, err := envelope.Dial(ctx, socket)
	if err != nil {
		return err
	}
	defer c.Close()
	id := strings.ToLower(strings.TrimSpace(role))
	if id == "" {
		return errors.New("join a session: no role named")
	}
	a := &agent{c: c, h: h, id: id, session: session, convs: make(map[string]*conv), byRelay: make(map[string]*conv)}
	events := c.Events()
	if err := a.do(ctx, envelope.TypeAgentAdd, "", map[string]string{"id": id, "name": id}); err != nil {
		return fmt.Errorf("add %s to session %s: %w", id, session, err)
	}
	if ready != nil {
		ready()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); a.wg.Wait() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if ev.Type == envelope.TypeActionSubmit && ev.Dst == id {
				a.submitted(ctx, ev)
			}
		}
	}
}

type agent struct {
	c       *envelope.Client
	h       Host
	id      string
	session string

	wg    sync.WaitGroup
	mu    sync.Mutex
	convs map[string]*conv
	// byRelay finds the conversation a relay was sent from, by relay id:
	// the replies to a relay carry its context, not the conversation's.
	byRelay map[string]*conv
}

// conv is one conversation: its Weave session, its queue of turns and the
// turn in progress.
type conv struct {
	key    string
	weave  string
	gen    int
	turns  chan func(context.Context)
	cancel context.CancelFunc // the turn in progress
	// relays are the relays the agent sent in this conversation that are
	// still open, and origin the turn that started them: its answer goes
	// to origin's sender once the agent says task_done (or answers in
	// plain text, which ends a relay too).
	relays []string
	origin *turnOf
}

// turnOf is the action a turn answers.
type turnOf struct {
	src string
	p   envelope.Submit
	act envelope.Action
}

func (a *agent) do(ctx context.Context, typ, dst string, payload any) error {
	env, err := envelope.New(typ, a.id, payload)
	if err != nil {
		return err
	}
	env.Session, env.Dst = a.session, dst
	rep, err := a.c.Do(ctx, env)
	if err != nil {
		return err
	}
	return rep.Err()
}

func (a *agent) conv(ctx context.Context, key string) *conv {
	a.mu.Lock()
	defer a.mu.Unlock()
	cv := a.convs[key]
	if cv == nil {
		if len(a.convs) >= MaxConversations {
			return nil
		}
		cv = &conv{key: key, turns: make(chan func(context.Context), 64)}
		cv.weave = a.weaveSession(cv)
		a.convs[key] = cv
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case turn := <-cv.turns:
					turn(ctx)
				}
			}
		}()
	}
	return cv
}

// weaveSession names the Weave session of a conversation's generation:
// each "new" starts the next.
func (a *agent) weaveSession(cv *conv) string {
	return fmt.Sprintf("envelope-%s-%s-%s-%d", a.session, a.id, cv.key, cv.gen)
}

func (a *agent) submitted(ctx context.Context, ev envelope.Envelope) {
	var p envelope.Submit
	if err := ev.Decode(&p); err != nil {
		return
	}
	key := ev.Src
	if p.Context != nil && p.Context.ContextID != "" {
		key = p.Context.ContextID
	}
	a.mu.Lock()
	cv := a.byRelay[key]
	a.mu.Unlock()
	if cv == nil {
		cv = a.conv(ctx, key)
	}
	for _, act := range p.Actions {
		if act.Dst != a.id {
			continue
		}
		if cv == nil {
			a.result(ctx, ev.Src, p, act, envelope.ResultRejected, fmt.Sprintf("%s holds %d conversations in this session, its most; continue one of them (its context_id)", a.id, MaxConversations), nil)
			continue
		}
		if act.Type == envelope.ActionControl && act.Command == envelope.CommandInterrupt {
			// An interrupt jumps the queue: it acts on the turn in progress.
			a.interrupt(ctx, cv, ev.Src, p, act)
			continue
		}
		select {
		case cv.turns <- func(ctx context.Context) { a.act(ctx, cv, ev.Src, p, act) }:
		case <-ctx.Done():
			return
		}
	}
}

// result records act's status. A result the bus refuses (the action was
// abandoned when its session closed, say) has no one left to tell, so its
// error is dropped.
func (a *agent) result(ctx context.Context, dst string, p envelope.Submit, act envelope.Action, status, detail string, data *envelope.ResultData) {
	_ = a.do(ctx, envelope.TypeActionResult, dst, envelope.Result{GroupID: p.GroupID, ActionID: act.ActionID,
		ActionIndex: act.ActionIndex, Status: status, Detail: detail, Data: data})
}

func (a *agent) interrupt(ctx context.Context, cv *conv, src string, p envelope.Submit, act envelope.Action) {
	a.mu.Lock()
	cancel := cv.cancel
	a.mu.Unlock()
	if cancel == nil {
		a.result(ctx, src, p, act, envelope.ResultRejected, "no turn in progress", nil)
		return
	}
	cancel()
	a.result(ctx, src, p, act, envelope.ResultCompleted, "the turn in progress was interrupted", nil)
}

// act carries out one action of the conversation, in turn.
func (a *agent) act(ctx context.Context, cv *conv, src string, p envelope.Submit, act envelope.Action) {
	if act.Type == envelope.ActionControl && act.Command != envelope.CommandReview {
		a.result(ctx, src, p, act, envelope.ResultAccepted, "", nil)
	}
	a.mu.Lock()
	weave := cv.weave
	a.mu.Unlock()
	switch {
	case act.Type == envelope.ActionMessage:
		prompt := act.Text
		if act.Kind == envelope.KindReply {
			from := act.SenderName
			if from == "" {
				from = src
			}
			prompt = fmt.Sprintf("%s replied:\n%s", from, act.Text)
		}
		a.turn(ctx, cv, src, p, act, a.id, weave, prompt)
	case act.Command == envelope.CommandNew:
		a.mu.Lock()
		cv.gen++
		cv.weave = a.weaveSession(cv)
		weave = cv.weave
		a.mu.Unlock()
		a.result(ctx, src, p, act, envelope.ResultCompleted, "a fresh conversation", &envelope.ResultData{NewContextID: weave})
	case act.Command == envelope.CommandCompact:
		if err := a.h.Compact(ctx, weave, a.id); err != nil {
			a.result(ctx, src, p, act, envelope.ResultError, "compact: "+err.Error(), nil)
			return
		}
		a.result(ctx, src, p, act, envelope.ResultCompleted, "compacted", nil)
	case act.Command == envelope.CommandReview:
		prompt := fmt.Sprintf("Review the work of %s in this project so far.", a.id)
		if strings.TrimSpace(act.Args) != "" {
			prompt += "\n\n" + act.Args
		}
		// Weft reviews in a session of its own beside the conversation's.
		a.turn(ctx, cv, src, p, act, ReviewRole, weave+"-review", prompt)
	default:
		a.result(ctx, src, p, act, envelope.ResultRejected, fmt.Sprintf("%s does not know control %q; use new, compact, interrupt or review", a.id, act.Command), nil)
	}
}

// turn has role answer prompt in Weave session weave, replies with the
// answer and ends the action. An interrupt cancels it.
func (a *agent) turn(ctx context.Context, cv *conv, src string, p envelope.Submit, act envelope.Action, role, weave, prompt string) {
	tctx, cancel := context.WithCancel(ctx)
	a.mu.Lock()
	cv.cancel = cancel
	a.mu.Unlock()
	// Accepted once an interrupt can reach the turn.
	a.result(ctx, src, p, act, envelope.ResultAccepted, "", nil)
	defer func() {
		a.mu.Lock()
		cv.cancel = nil
		a.mu.Unlock()
		cancel()
	}()
	resp, err := a.h.Ask(tctx, role, weave, prompt)
	switch {
	case tctx.Err() != nil && ctx.Err() == nil:
		a.result(ctx, src, p, act, envelope.ResultError, "interrupted", nil)
		return
	case err != nil:
		a.result(ctx, src, p, act, envelope.ResultError, err.Error(), nil)
		return
	case resp.Error != "":
		a.result(ctx, src, p, act, envelope.ResultError, resp.Error, nil)
		return
	}
	if role != a.id {
		// Weft's review is plain text for the one who asked.
		a.answer(ctx, turnOf{src, p, act}, src, p, act, resp.Output)
		return
	}
	a.output(ctx, cv, turnOf{src, p, act}, resp.Output)
}

// output carries out the agent's answer to a turn as the source
// document's relay output: relay_actions become a relay.submit from the
// agent to the session's other agents (whose replies come back as turns),
// task_done or plain text ends the open relays (relay.done) and answers
// whoever started them, else whoever the turn answers.
func (a *agent) output(ctx context.Context, cv *conv, t turnOf, output string) {
	out, err := envelope.ParseRelayOutput(output)
	if err != nil {
		// A malformed relay output is shown as written rather than lost.
		out = envelope.RelayOutput{Kind: envelope.OutputLocal, Text: output}
	}
	a.mu.Lock()
	origin, relays := cv.origin, cv.relays
	a.mu.Unlock()
	if out.Kind == envelope.OutputRelayActions {
		id := envelope.NewID()
		rs := envelope.RelaySubmit{RelayID: id, TaskID: t.p.TaskID}
		for i, ra := range out.Actions {
			rs.Actions = append(rs.Actions, envelope.Action{Type: ra.Type, Dst: ra.Dst, Text: ra.Text, Plan: ra.Plan,
				Command: ra.Command, Args: ra.Args, ActionIndex: envelope.IntPtr(i), SenderName: a.id})
		}
		// The relay is known before it is sent: an agent may reply to it
		// before the submit returns, and its reply must find this
		// conversation, not start one of its own.
		a.mu.Lock()
		cv.relays = append(cv.relays, id)
		a.byRelay[id] = cv
		setOrigin := cv.origin == nil && t.act.Kind != envelope.KindReply
		if setOrigin {
			cv.origin = &t
		}
		a.mu.Unlock()
		if err := a.do(ctx, envelope.TypeRelaySubmit, "", rs); err != nil {
			a.mu.Lock()
			cv.relays = slices.DeleteFunc(cv.relays, func(r string) bool { return r == id })
			delete(a.byRelay, id)
			if setOrigin {
				cv.origin = nil
			}
			a.mu.Unlock()
			a.result(ctx, t.src, t.p, t.act, envelope.ResultError, "relay: "+err.Error(), nil)
			return
		}
		a.result(ctx, t.src, t.p, t.act, envelope.ResultCompleted, "relayed as "+id, nil)
		return
	}
	text := out.Text
	if out.Kind == envelope.OutputTaskDone {
		text = out.Summary
	}
	if len(relays) > 0 {
		for _, id := range relays {
			_ = a.do(ctx, envelope.TypeRelayDone, "", envelope.RelayDone{RelayID: id, Summary: text})
		}
		a.mu.Lock()
		for _, id := range relays {
			delete(a.byRelay, id)
		}
		cv.relays, cv.origin = nil, nil
		a.mu.Unlock()
	}
	to := t
	if origin != nil {
		to = *origin
	}
	if to.act.Kind == envelope.KindReply {
		// Answering a reply with a reply is the ping-pong the loop guard
		// stops: the answer stays in the agent's conversation.
		a.result(ctx, t.src, t.p, t.act, envelope.ResultCompleted, "", nil)
		return
	}
	a.answer(ctx, to, t.src, t.p, t.act, text)
}

// answer replies text to the action of to and ends the turn's action.
func (a *agent) answer(ctx context.Context, to turnOf, src string, p envelope.Submit, act envelope.Action, text string) {
	if strings.TrimSpace(text) == "" {
		text = "(no answer)"
	}
	reply := envelope.Submit{GroupID: envelope.NewID(), Context: to.p.Context, TaskID: to.p.TaskID, Actions: []envelope.Action{{
		Type: envelope.ActionMessage, Kind: envelope.KindReply, Dst: to.src, ActionID: envelope.NewID(), ActionIndex: envelope.IntPtr(0),
		Text: text, SenderName: a.id, ReplyToActionID: to.act.ActionID}}}
	if err := a.do(ctx, envelope.TypeActionSubmit, "", reply); err != nil {
		a.result(ctx, src, p, act, envelope.ResultError, "send the answer: "+err.Error(), nil)
		return
	}
	a.result(ctx, src, p, act, envelope.ResultCompleted, "", nil)
}
