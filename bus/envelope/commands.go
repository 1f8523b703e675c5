package envelope

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/weavehq/weave/internal/fastjson"
)

// decode unmarshals env's payload into v, turning type errors into
// invalid_request errors that name the command.
func decode(env Envelope, v any) error {
	if len(env.Payload) == 0 {
		return nil
	}
	if err := fastjson.Unmarshal(env.Payload, v); err != nil {
		return errorf(CodeInvalidRequest, "bad %s payload: %v", env.Type, err)
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	raw, err := fastjson.Marshal(v)
	if err != nil {
		// Only our own plain structs reach here.
		panic(fmt.Sprintf("marshal %T: %v", v, err))
	}
	return raw
}

func (b *Broker) sessionCreate(ctx context.Context, c *conn, env Envelope) (any, func(), error) {
	var p struct {
		Name string `json:"name"`
	}
	if err := decode(env, &p); err != nil {
		return nil, nil, err
	}
	open := 0
	for _, s := range b.sessions {
		if s.info.Status != "closed" {
			open++
		}
	}
	if open >= b.opts.MaxSessions {
		return nil, nil, errorf(CodeLimit, "the bus holds its limit of %d open sessions (bus.max_sessions): close one with session.close or raise the limit", b.opts.MaxSessions)
	}
	if c != nil && b.openCreated(c) >= b.opts.MaxSessionsPerConnection {
		return nil, nil, errorf(CodeLimit, "this connection created %d open sessions, its limit (half of bus.max_sessions): close one with session.close first", b.opts.MaxSessionsPerConnection)
	}
	now := FormatTime(b.opts.Now())
	info := SessionInfo{ID: NewID(), Name: strings.TrimSpace(p.Name), Status: "open", CreatedAt: now, UpdatedAt: now}
	created := Envelope{V: Version, Type: TypeSessionCreated, ID: NewID(), TS: now, Src: env.Src, Session: info.ID, Payload: mustJSON(info)}
	if err := b.indexEntry(ctx, created); err != nil {
		return nil, nil, err
	}
	s := b.sessions[info.ID]
	if s == nil {
		return nil, nil, fmt.Errorf("session %s was recorded but is not in the index", info.ID)
	}
	if _, err := b.emit(ctx, s, created); err != nil {
		return nil, nil, err
	}
	b.snapshot(ctx, s)
	if c != nil {
		c.created = append(c.created, info.ID)
	}
	return info, nil, nil
}

// openCreated drops the sessions c created that are closed or forgotten
// from its list, and returns how many are left open. b.mu is held.
func (b *Broker) openCreated(c *conn) int {
	open := c.created[:0]
	for _, id := range c.created {
		if s := b.sessions[id]; s != nil && s.info.Status != "closed" {
			open = append(open, id)
		}
	}
	c.created = open
	return len(open)
}

// sessionList lists the open sessions; payload.all (or include_closed)
// lists the closed ones kept too. Clients that do not read status see only
// sessions they can still use.
func (b *Broker) sessionList(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	var p struct {
		All           bool `json:"all"`
		IncludeClosed bool `json:"include_closed"`
	}
	if err := decode(env, &p); err != nil {
		return nil, nil, err
	}
	if err := b.catchUpIndex(ctx); err != nil {
		return nil, nil, err
	}
	out := make([]SessionInfo, 0, len(b.order))
	for _, id := range b.order {
		s := b.sessions[id]
		if err := b.catchUp(ctx, s); err != nil {
			return nil, nil, err
		}
		if s.info.Status == "closed" && !p.All && !p.IncludeClosed {
			continue
		}
		out = append(out, s.info)
	}
	return SessionList{Sessions: out}, nil, nil
}

func (b *Broker) sessionClose(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, err := b.lookup(ctx, env, true)
	if err != nil {
		return nil, nil, err
	}
	if s.info.Status == "closed" {
		return s.info, nil, nil
	}
	// Nothing is left hanging: unfinished actions end with an error result.
	if err := b.failPending(ctx, s, func(*actionState) bool { return true }, "session closed before the action finished"); err != nil {
		return nil, nil, err
	}
	info := s.info
	info.Status = "closed"
	info.UpdatedAt = FormatTime(b.opts.Now())
	closed, err := b.emit(ctx, s, Envelope{Type: TypeSessionClosed, Src: env.Src, Payload: mustJSON(info)})
	if err != nil {
		return nil, nil, err
	}
	b.snapshot(ctx, s)
	if err := b.indexEntry(ctx, closed); err != nil {
		return nil, nil, err
	}
	return info, nil, nil
}

// failPending ends every unfinished action that match selects with an error
// result from the bus to its submitter.
func (b *Broker) failPending(ctx context.Context, s *session, match func(*actionState) bool, detail string) error {
	var pending []*actionState
	for _, st := range s.actionOrder {
		if !st.terminal && match(st) {
			pending = append(pending, st)
		}
	}
	for _, st := range pending {
		if err := b.result(ctx, s, Envelope{Src: BusSrc, Dst: st.submitter},
			Result{GroupID: st.groupID, ActionID: st.action.ActionID, ActionIndex: IntPtr(st.action.Index()), Status: ResultError, Detail: detail}); err != nil {
			return err
		}
	}
	return nil
}

// result records an action.result event. A relay does not end with its
// actions: its owner ends it (relay.submit with done, or relay.done), since
// codex-weave's TUI keeps a relay open across its model's turns until then.
func (b *Broker) result(ctx context.Context, s *session, ev Envelope, r Result) error {
	ev.Type, ev.Payload = TypeActionResult, mustJSON(r)
	_, err := b.emit(ctx, s, ev)
	return err
}

// remember records a newly submitted action.
func (s *session) remember(st *actionState) {
	s.actions[st.groupID+"\x00"+st.action.ActionID] = st
	s.actionByID[st.action.ActionID] = st
	s.groups[st.groupID]++
	if st.terminal {
		s.done = append(s.done, st)
	} else {
		s.actionOrder = append(s.actionOrder, st)
	}
	s.forgetOld()
}

// finish marks st terminal with status; compactActions then drops it from
// the unfinished order.
func (s *session) finish(st *actionState, status string) {
	st.status, st.terminal = status, true
	s.done = append(s.done, st)
	s.forgetOld()
}

// forgetOld drops the oldest finished actions beyond keepDone. A result for
// one of them is then not_found, and its group_id may be used again.
func (s *session) forgetOld() {
	over := len(s.done) - s.keepDone
	if over <= 0 {
		return
	}
	for _, st := range s.done[:over] {
		key := st.groupID + "\x00" + st.action.ActionID
		if s.actions[key] == st {
			delete(s.actions, key)
		}
		if s.actionByID[st.action.ActionID] == st {
			delete(s.actionByID, st.action.ActionID)
		}
		if s.groups[st.groupID]--; s.groups[st.groupID] <= 0 {
			delete(s.groups, st.groupID)
		}
	}
	s.done = append(s.done[:0:0], s.done[over:]...)
}

// compactActions drops finished actions from the unfinished order.
func (s *session) compactActions() {
	keep := s.actionOrder[:0]
	for _, st := range s.actionOrder {
		if !st.terminal {
			keep = append(keep, st)
		}
	}
	clear(s.actionOrder[len(keep):])
	s.actionOrder = keep
}

type agentPayload struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func (b *Broker) agentAdd(ctx context.Context, c *conn, env Envelope) (any, func(), error) {
	s, p, err := inSession[agentPayload](b, ctx, env, false)
	if err != nil {
		return nil, nil, err
	}
	id := p.ID
	if id == "" {
		id = env.Src
	}
	if id != env.Src {
		return nil, nil, errorf(CodeForbidden, "agent.add: payload.id %q must equal src %q; an agent adds itself", id, env.Src)
	}
	name := strings.TrimSpace(p.Name)
	if name != "" {
		if other := s.nameTaken(name, id); other != "" {
			return nil, nil, errorf(CodeConflict, "agent name %q is taken by agent %q in this session; pick another name", name, other)
		}
	}
	a := s.agent(id)
	rejoined := a != nil
	switch {
	case a == nil:
		if _, err := b.emit(ctx, s, Envelope{Type: TypeAgentAdded, Src: env.Src, Payload: mustJSON(AgentInfo{ID: id, Name: name})}); err != nil {
			return nil, nil, err
		}
		b.snapshot(ctx, s)
	case name != "" && name != a.info.Name:
		if _, err := b.emit(ctx, s, Envelope{Type: TypeAgentUpdated, Src: env.Src, Payload: mustJSON(agentPayload{ID: id, Name: name})}); err != nil {
			return nil, nil, err
		}
		b.snapshot(ctx, s)
	}
	if a = s.agent(id); a == nil {
		return nil, nil, errorf(CodeConflict, "agent %q was removed while joining; add it again", id)
	}
	var post func()
	if c != nil {
		a.sinks[c] = struct{}{}
		// Actions still waiting for a result follow the reply.
		post = func() { b.redeliver(s, a, c) }
	}
	return AgentJoined{ID: a.info.ID, Name: a.info.Name, Rejoined: rejoined}, post, nil
}

// redeliver pushes to connection c the action.submit events of agent a that
// have no result yet, in submission order. Delivery before a disconnect is
// not proof of receipt, so a rejoining agent may see an action twice; it
// tells them apart by action_id.
func (b *Broker) redeliver(s *session, a *agent, c *conn) {
	sent := make(map[*Envelope]bool)
	for _, st := range s.actionOrder {
		if st.status != "" || st.target != a.info.ID || st.event == nil || sent[st.event] {
			continue
		}
		sent[st.event] = true
		if !c.out.push(*st.event) {
			delete(a.sinks, c)
			return
		}
	}
}

func (b *Broker) agentRemove(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, p, err := inSession[agentPayload](b, ctx, env, true)
	if err != nil {
		return nil, nil, err
	}
	if p.ID == "" {
		return nil, nil, errorf(CodeInvalidRequest, "agent.remove needs payload.id, the agent to remove")
	}
	a := s.agent(p.ID)
	if s.info.Status == "closed" {
		// The session is gone and so is everyone in it: a client that
		// leaves after closing it has nothing left to do.
		if a != nil {
			return AgentInfo{ID: a.info.ID, Name: a.info.Name}, nil, nil
		}
		return AgentInfo{ID: p.ID}, nil, nil
	}
	if a == nil {
		return nil, nil, errorf(CodeNotFound, "no agent %q in session %q (agents: %s)", p.ID, s.info.ID, s.agentIDs())
	}
	info := AgentInfo{ID: a.info.ID, Name: a.info.Name}
	if err := b.failPending(ctx, s, func(st *actionState) bool { return st.target == info.ID },
		fmt.Sprintf("agent %q was removed before finishing the action", info.ID)); err != nil {
		return nil, nil, err
	}
	if _, err := b.emit(ctx, s, Envelope{Type: TypeAgentRemoved, Src: env.Src, Payload: mustJSON(info)}); err != nil {
		return nil, nil, err
	}
	b.snapshot(ctx, s)
	return info, nil, nil
}

func (b *Broker) agentList(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, err := b.lookup(ctx, env, true)
	if err != nil {
		return nil, nil, err
	}
	out := make([]AgentInfo, 0, len(s.agents))
	for _, a := range s.agents {
		info := a.info
		if len(a.sinks) > 0 {
			info.Status = "connected"
		}
		out = append(out, info)
	}
	return AgentList{Agents: out}, nil, nil
}

func (b *Broker) agentUpdate(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, p, err := inSession[agentPayload](b, ctx, env, false)
	if err != nil {
		return nil, nil, err
	}
	if p.ID == "" {
		return nil, nil, errorf(CodeInvalidRequest, "agent.update needs payload.id (your own agent id)")
	}
	if p.ID != env.Src {
		return nil, nil, errorf(CodeForbidden, "agent.update: payload.id %q must equal src %q; agents update only themselves", p.ID, env.Src)
	}
	name := strings.TrimSpace(p.Name)
	if name == "" {
		return nil, nil, errorf(CodeInvalidRequest, "agent.update needs a non-empty payload.name")
	}
	if s.agent(p.ID) == nil {
		return nil, nil, errorf(CodeNotFound, "no agent %q in session %q; join with agent.add first", p.ID, s.info.ID)
	}
	if other := s.nameTaken(name, p.ID); other != "" {
		return nil, nil, errorf(CodeConflict, "agent name %q is taken by agent %q in this session; pick another name", name, other)
	}
	out := agentPayload{ID: p.ID, Name: name}
	if _, err := b.emit(ctx, s, Envelope{Type: TypeAgentUpdated, Src: env.Src, Payload: mustJSON(out)}); err != nil {
		return nil, nil, err
	}
	b.snapshot(ctx, s)
	return out, nil, nil
}

func validMessageKind(k string) bool {
	switch k {
	case KindUser, KindReply, KindControl, KindSystem:
		return true
	}
	return false
}

func (b *Broker) messageCreated(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, err := b.lookup(ctx, env, false)
	if err != nil {
		return nil, nil, err
	}
	if !messageOK(env.Payload) {
		if err := checkMessage(env); err != nil {
			return nil, nil, err
		}
	}
	ev, err := b.routed(s, env)
	if err != nil {
		return nil, nil, err
	}
	if ev, err = b.emit(ctx, s, ev); err != nil {
		return nil, nil, err
	}
	return MessageRecorded{MessageID: ev.ID, Seq: ev.Seq}, nil, nil
}

// checkMessage decodes a message.created payload and says what is wrong
// with it, if anything: the whole check, of which messageOK is the quick
// yes.
func checkMessage(env Envelope) error {
	var p struct {
		Message
		PayloadRef json.RawMessage `json:"payload_ref"`
	}
	if err := decode(env, &p); err != nil {
		return err
	}
	if len(p.PayloadRef) > 0 {
		return errorf(CodeInvalidRequest, "message.created carries its text inline in payload.text; payload_ref is not allowed")
	}
	if strings.TrimSpace(p.Text) == "" {
		return errorf(CodeInvalidRequest, "message.created needs a non-empty payload.text")
	}
	if p.Kind != "" && !validMessageKind(p.Kind) {
		return errorf(CodeInvalidRequest, "message kind %q is not one of user, reply, control, system", p.Kind)
	}
	return nil
}

// routed is the event recording a client's message or task envelope: its
// own id, src and payload, and dst resolved to an agent id.
func (b *Broker) routed(s *session, env Envelope) (Envelope, error) {
	ev := Envelope{Type: env.Type, ID: env.ID, Src: env.Src, Payload: env.Payload}
	if env.Dst != "" {
		a, err := s.resolve(env.Dst)
		if err != nil {
			return ev, err
		}
		ev.Dst = a.info.ID
	}
	return ev, nil
}

func (b *Broker) actionSubmit(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, p, err := inSession[Submit](b, ctx, env, false)
	if err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(p.GroupID) == "" {
		return nil, nil, errorf(CodeInvalidRequest, "action.submit needs payload.group_id")
	}
	if s.groups[p.GroupID] > 0 {
		return nil, nil, errorf(CodeConflict, "group_id %q was already submitted under another idempotency_key; use a new group_id", p.GroupID)
	}
	if len(p.Actions) == 0 {
		return nil, nil, errorf(CodeInvalidRequest, "action.submit needs a non-empty payload.actions")
	}
	targets, err := s.checkActions(p.Actions)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkOwner(env.Src, p.Context, p.Actions); err != nil {
		return nil, nil, err
	}
	s.correlateReplies(p.Actions)
	sent, rejected, err := b.deliver(ctx, s, env, p, targets)
	if err != nil {
		return nil, nil, err
	}
	return SubmitRecorded{GroupID: p.GroupID, Targets: sent, Rejected: rejected}, nil, nil
}

// checkActions validates each action and resolves its target. Any fault
// fails the whole submit: nothing is delivered.
func (s *session) checkActions(actions []Action) ([]*agent, error) {
	targets := make([]*agent, len(actions))
	ids := make(map[string]bool)
	indexes := make(map[int]bool)
	for i, a := range actions {
		ag, err := s.checkAction(a, ids, indexes)
		if err != nil {
			return nil, &Error{Code: err.Code, Message: fmt.Sprintf("actions[%d]: %s", i, err.Message)}
		}
		targets[i] = ag
	}
	return targets, nil
}

// checkAction validates one action against the others of its submit (ids
// and indexes seen so far) and the session, and resolves its target.
func (s *session) checkAction(a Action, ids map[string]bool, indexes map[int]bool) (*agent, *Error) {
	if err := checkAction(a); err != nil {
		return nil, err
	}
	if ids[a.ActionID] {
		return nil, errorf(CodeInvalidRequest, "action_id %q appears twice; each action needs its own id", a.ActionID)
	}
	if s.actionByID[a.ActionID] != nil {
		return nil, errorf(CodeConflict, "action_id %q was used by an earlier action; action ids are unique", a.ActionID)
	}
	if indexes[*a.ActionIndex] {
		return nil, errorf(CodeInvalidRequest, "action_index %d appears twice", *a.ActionIndex)
	}
	ids[a.ActionID], indexes[*a.ActionIndex] = true, true
	return s.resolve(a.Dst)
}

// checkOwner enforces conversation ownership: the first relay in a
// conversation fixes its owner, and only the owner sends follow-ups and
// relays in it. Replies are how everyone else answers, so a submit of
// replies only may come from anyone.
func (s *session) checkOwner(src string, c *Context, actions []Action) error {
	if c == nil || c.ContextID == "" {
		return nil
	}
	cid := c.ContextID
	owner, known := s.owners[cid]
	if !known {
		owner = c.OwnerID
		if owner == "" {
			owner = src
		}
	}
	if c.OwnerID != "" && c.OwnerID != owner {
		return errorf(CodeForbidden, "conversation %q is owned by %q, not %q; ownership does not transfer", cid, owner, c.OwnerID)
	}
	if src == owner || !slices.ContainsFunc(actions, func(a Action) bool { return !isReply(a) }) {
		return nil
	}
	return errorf(CodeForbidden, "only %q, the owner of conversation %q, relays in it; answer it with a reply instead", owner, cid)
}

func isReply(a Action) bool { return a.Type == ActionMessage && a.Kind == KindReply }

// correlateReplies gives a reply to a relayed action the relay_id and
// plan_step_id of what it answers, so the relay's owner can match them.
func (s *session) correlateReplies(actions []Action) {
	for i, a := range actions {
		if !isReply(a) || a.ReplyToActionID == "" {
			continue
		}
		if prev := s.actionByID[a.ReplyToActionID]; prev != nil {
			if actions[i].RelayID == "" {
				actions[i].RelayID = prev.action.RelayID
			}
			if actions[i].PlanStepID == "" {
				actions[i].PlanStepID = prev.action.PlanStepID
			}
		}
	}
}

// loopGuard returns the actions to reject, by index, with the reason: a
// reply to a reply is a ping-pong and is not relayed.
func (s *session) loopGuard(actions []Action) map[int]string {
	rejected := make(map[int]string)
	for i, a := range actions {
		if !isReply(a) || a.ReplyToActionID == "" {
			continue
		}
		if prev := s.actionByID[a.ReplyToActionID]; prev != nil && isReply(prev.action) {
			rejected[i] = fmt.Sprintf("loop guard: %q is itself a reply; replies are not re-relayed", a.ReplyToActionID)
		}
	}
	return rejected
}

// deliver records one action.submit event per target, its actions in
// their original order, and a rejected result for each action the loop
// guard stops. It returns the targets and the rejected action ids.
func (b *Broker) deliver(ctx context.Context, s *session, env Envelope, p Submit, targets []*agent) (sent, rejectedIDs []string, err error) {
	rejected := s.loopGuard(p.Actions)
	var order []*agent
	perTarget := make(map[*agent][]Action)
	for i, ag := range targets {
		if _, skip := rejected[i]; skip {
			continue
		}
		if _, ok := perTarget[ag]; !ok {
			order = append(order, ag)
		}
		perTarget[ag] = append(perTarget[ag], p.Actions[i])
	}
	sent = make([]string, 0, len(order))
	for _, ag := range order {
		group := Submit{GroupID: p.GroupID, Context: p.Context, TaskID: p.TaskID, Actions: perTarget[ag]}
		ev := Envelope{Type: TypeActionSubmit, Src: env.Src, Dst: ag.info.ID, Payload: mustJSON(group)}
		if len(order) == 1 {
			ev.ID = env.ID
		}
		if _, err := b.emit(ctx, s, ev); err != nil {
			return nil, nil, err
		}
		sent = append(sent, ag.info.ID)
	}
	rejectedIDs = []string{}
	for i, a := range p.Actions {
		detail, ok := rejected[i]
		if !ok {
			continue
		}
		if _, err := b.emit(ctx, s, Envelope{Type: TypeActionResult, Src: BusSrc, Dst: env.Src,
			Payload: mustJSON(Result{GroupID: p.GroupID, ActionID: a.ActionID, ActionIndex: a.ActionIndex,
				Status: ResultRejected, Detail: detail})}); err != nil {
			return nil, nil, err
		}
		rejectedIDs = append(rejectedIDs, a.ActionID)
	}
	return sent, rejectedIDs, nil
}

// relaySubmit takes an owner's outbound relay (codex-weave's relay.submit):
// ordered actions for its targets, delivered as action.submit events per
// target with the sender recorded as the conversation's owner. Unlike
// action.submit, an action that cannot be delivered does not stop the
// others: it is listed in failures. The reply's payload is relay.accepted,
// with a targets map saying what each target got. The owner submits again
// under the same relay_id for each turn of its model, and ends the relay
// with a submit carrying done. A wait action is delivered to no one: it is
// reported back under each target it waits for.
func (b *Broker) relaySubmit(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, p, err := inSession[RelaySubmit](b, ctx, env, false)
	if err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(p.RelayID) == "" {
		return nil, nil, errorf(CodeInvalidRequest, "relay.submit needs payload.relay_id")
	}
	r := s.relays[p.RelayID]
	if r != nil && r.owner != env.Src {
		return nil, nil, errorf(CodeForbidden, "relay %q was sent by %q; only it submits to that relay", p.RelayID, r.owner)
	}
	if p.Done != nil {
		if len(p.Actions) > 0 {
			return nil, nil, errorf(CodeInvalidRequest, "relay.submit with done ends relay %q and carries no actions; send the actions first", p.RelayID)
		}
		if err := b.endRelay(ctx, s, env.Src, p.RelayID, p.Done.Summary); err != nil {
			return nil, nil, err
		}
		return RelayAccepted{RelayID: p.RelayID, Status: "accepted", Failures: []RelayFailure{}, Targets: map[string]*RelayTarget{}}, nil, nil
	}
	if len(p.Actions) == 0 {
		return nil, nil, errorf(CodeInvalidRequest, "relay.submit needs a non-empty payload.actions (or done to end the relay)")
	}
	if r != nil && r.done {
		return nil, nil, errorf(CodeConflict, "relay %q has ended; start a new relay with a new relay_id", p.RelayID)
	}
	if r == nil && s.groups[p.RelayID] > 0 {
		return nil, nil, errorf(CodeConflict, "relay_id %q was already used in this session; use a new relay_id", p.RelayID)
	}
	// Each submit of a relay is its own group, so that its action ids
	// (group/index) never meet an earlier turn's.
	groupID := p.RelayID
	for n := 2; s.groups[groupID] > 0; n++ {
		groupID = fmt.Sprintf("%s#%d", p.RelayID, n)
	}
	rc := &Context{ContextID: p.RelayID, OwnerID: env.Src}
	if p.Context != nil && p.Context.ContextID != "" {
		rc = &Context{ContextID: p.Context.ContextID, OwnerID: env.Src, ParentMessageID: p.Context.ParentMessageID}
	}
	if err := s.checkOwner(env.Src, rc, nil); err != nil {
		return nil, nil, err
	}
	out := RelayAccepted{RelayID: p.RelayID, Failures: []RelayFailure{}, Targets: map[string]*RelayTarget{}}
	target := func(id string) *RelayTarget {
		t := out.Targets[id]
		if t == nil {
			t = &RelayTarget{ContextID: rc.ContextID, TaskID: p.TaskID, GroupID: groupID, Actions: []RelayTargetAction{}}
			out.Targets[id] = t
		}
		return t
	}
	sub := Submit{GroupID: groupID, Context: rc, TaskID: p.TaskID}
	var targets []*agent
	var waits []Action
	ids, indexes := make(map[string]bool), make(map[int]bool)
	for i, a := range p.Actions {
		a = relayAction(groupID, p.RelayID, i, a)
		if a.Type == ActionWait {
			if cerr := s.checkWait(a); cerr != nil {
				out.Failures = append(out.Failures, RelayFailure{Dst: strings.Join(a.Targets, ","), ActionIndex: i, Code: cerr.Code, Message: cerr.Message})
				continue
			}
			waits = append(waits, a)
			continue
		}
		ag, cerr := s.checkAction(a, ids, indexes)
		if cerr != nil {
			out.Failures = append(out.Failures, RelayFailure{Dst: a.Dst, ActionIndex: i, Code: cerr.Code, Message: cerr.Message})
			continue
		}
		sub.Actions = append(sub.Actions, a)
		targets = append(targets, ag)
	}
	s.correlateReplies(sub.Actions)
	if len(targets) > 0 {
		sent, rejected, err := b.deliver(ctx, s, env, sub, targets)
		if err != nil {
			return nil, nil, err
		}
		out.TargetCount = len(sent)
		for i, a := range sub.Actions {
			if slices.Contains(rejected, a.ActionID) {
				continue
			}
			t := target(targets[i].info.ID)
			t.Actions = append(t.Actions, RelayTargetAction{ActionID: a.ActionID, ActionIndex: a.Index(), Type: a.Type,
				PlanStepID: a.PlanStepID, ExpectsReply: a.ExpectsReply, Command: a.Command})
		}
	}
	for _, a := range waits {
		for _, ref := range a.Targets {
			ag, _ := s.resolve(ref) // checkWait resolved every one
			t := target(ag.info.ID)
			t.Actions = append(t.Actions, RelayTargetAction{ActionID: a.ActionID, ActionIndex: a.Index(), Type: ActionWait, PlanStepID: a.PlanStepID})
		}
	}
	out.ActionCount = len(sub.Actions) + len(waits)
	switch {
	case len(out.Failures) == 0:
		out.Status = "accepted"
	case out.ActionCount > 0:
		out.Status = "partial"
	default:
		out.Status = "rejected"
	}
	return out, nil, nil
}

// checkWait validates a wait action: it names at least one target, each an
// agent of the session.
func (s *session) checkWait(a Action) *Error {
	if len(a.Targets) == 0 {
		return errorf(CodeInvalidRequest, "wait action needs targets (the agents whose replies it waits for)")
	}
	for _, ref := range a.Targets {
		if _, err := s.resolve(ref); err != nil {
			return err
		}
	}
	return nil
}

// relayAction fills what a relay action may leave out: its id and index
// (from its position), its type (message) and kind (user), and ties it to
// the relay.
func relayAction(groupID, relayID string, i int, a Action) Action {
	if a.ActionID == "" {
		a.ActionID = fmt.Sprintf("%s/%d", groupID, i)
	}
	if a.ActionIndex == nil {
		a.ActionIndex = IntPtr(i)
	}
	if a.Type == "" {
		a.Type = ActionMessage
	}
	if a.Type == ActionMessage && a.Kind == "" {
		a.Kind = KindUser
	}
	a.RelayID = relayID
	return a
}

// relayDone ends a relay from its owner's side (the model said task_done).
func (b *Broker) relayDone(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, p, err := inSession[RelayDone](b, ctx, env, false)
	if err != nil {
		return nil, nil, err
	}
	r := s.relays[p.RelayID]
	if r == nil {
		return nil, nil, errorf(CodeNotFound, "no relay %q in session %q; relay.done ends a relay sent with relay.submit", p.RelayID, s.info.ID)
	}
	if r.owner != env.Src {
		return nil, nil, errorf(CodeForbidden, "only %q, who sent relay %q, ends it", r.owner, p.RelayID)
	}
	if err := b.endRelay(ctx, s, env.Src, p.RelayID, p.Summary); err != nil {
		return nil, nil, err
	}
	return p, nil, nil
}

// endRelay announces the end of owner's relay with relay.done from the bus
// addressed to the owner (codex-weave's client drops a relay.done without
// dst, and one from itself). A relay already announced as done is not
// announced again; one that never delivered an action ends all the same.
func (b *Broker) endRelay(ctx context.Context, s *session, owner, relayID, summary string) error {
	r := s.relays[relayID]
	if r != nil && r.done {
		return nil
	}
	if r == nil {
		r = &relayState{owner: owner}
		s.relays[relayID] = r
	}
	_, err := b.emit(ctx, s, Envelope{Type: TypeRelayDone, Src: BusSrc, Dst: owner,
		Payload: mustJSON(RelayDone{RelayID: relayID, Summary: strings.TrimSpace(summary)})})
	return err
}

// checkAction validates one action's own fields.
func checkAction(a Action) *Error {
	switch a.Type {
	case ActionMessage:
		if a.Kind != KindUser && a.Kind != KindReply {
			return errorf(CodeInvalidRequest, "message kind %q must be user or reply", a.Kind)
		}
		if strings.TrimSpace(a.Text) == "" {
			return errorf(CodeInvalidRequest, "message action needs a non-empty text")
		}
	case ActionControl:
		if strings.TrimSpace(a.Command) == "" {
			return errorf(CodeInvalidRequest, "control action needs a command (new, compact, interrupt or review)")
		}
	case ActionWait:
		return errorf(CodeInvalidRequest, "a wait action goes in relay.submit, where the owner waits for its targets; action.submit delivers message and control actions")
	case "":
		return errorf(CodeInvalidRequest, "action needs a type: message or control")
	default:
		return errorf(CodeInvalidRequest, "action type %q must be message or control", a.Type)
	}
	if a.Dst == "" {
		return errorf(CodeInvalidRequest, "action needs a dst (agent id or name)")
	}
	if a.ActionID == "" {
		return errorf(CodeInvalidRequest, "action needs an action_id")
	}
	if a.ActionIndex == nil {
		return errorf(CodeInvalidRequest, "action needs an action_index (its position in the original list)")
	}
	if *a.ActionIndex < 0 {
		return errorf(CodeInvalidRequest, "action_index %d is negative", *a.ActionIndex)
	}
	return nil
}

func (b *Broker) actionResult(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, p, err := inSession[Result](b, ctx, env, false)
	if err != nil {
		return nil, nil, err
	}
	if p.GroupID == "" || p.ActionID == "" {
		return nil, nil, errorf(CodeInvalidRequest, "action.result needs payload.group_id and payload.action_id")
	}
	if !validResultStatus(p.Status) {
		return nil, nil, errorf(CodeInvalidRequest, "result status %q is not one of accepted, completed, blocked, queued, rejected, error", p.Status)
	}
	st := s.actions[p.GroupID+"\x00"+p.ActionID]
	if st == nil {
		return nil, nil, errorf(CodeNotFound, "no action %q in group %q in session %q", p.ActionID, p.GroupID, s.info.ID)
	}
	if p.ActionIndex == nil {
		return nil, nil, errorf(CodeInvalidRequest, "action.result needs payload.action_index (%d for action %q)", st.action.Index(), p.ActionID)
	}
	if *p.ActionIndex != st.action.Index() {
		return nil, nil, errorf(CodeInvalidRequest, "action_index %d does not match action %q (index %d)", *p.ActionIndex, p.ActionID, st.action.Index())
	}
	if st.terminal {
		return nil, nil, errorf(CodeConflict, "action %q already finished with %q; nothing follows a terminal status", p.ActionID, st.status)
	}
	if env.Src != st.target {
		return nil, nil, errorf(CodeForbidden, "only %q, the action's target, reports results for action %q", st.target, p.ActionID)
	}
	if p.Data != nil && *p.Data == (ResultData{}) {
		p.Data = nil
	}
	if err := b.result(ctx, s, Envelope{ID: env.ID, Src: env.Src, Dst: st.submitter}, p); err != nil {
		return nil, nil, err
	}
	return ResultRecorded{ActionID: p.ActionID, Status: p.Status, Terminal: Terminal(p.Status)}, nil, nil
}

func (b *Broker) taskEvent(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, p, err := inSession[TaskUpdate](b, ctx, env, false)
	if err != nil {
		return nil, nil, err
	}
	if p.TaskID == "" {
		return nil, nil, errorf(CodeInvalidRequest, "%s needs payload.task_id", env.Type)
	}
	status := TaskStatusDone
	if env.Type == TypeTaskUpdated {
		switch p.Status {
		case TaskStatusRunning, TaskStatusBlocked, TaskStatusReady, TaskStatusDone:
		default:
			return nil, nil, errorf(CodeInvalidRequest, "task status %q is not one of running, blocked, ready, done", p.Status)
		}
		status = p.Status
	}
	ev, err := b.routed(s, env)
	if err != nil {
		return nil, nil, err
	}
	if _, err := b.emit(ctx, s, ev); err != nil {
		return nil, nil, err
	}
	return TaskRecorded{TaskID: p.TaskID, Status: status}, nil, nil
}

func (b *Broker) eventsHistory(ctx context.Context, _ *conn, env Envelope) (any, func(), error) {
	s, p, err := inSession[struct {
		Limit *int `json:"limit"`
	}](b, ctx, env, true)
	if err != nil {
		return nil, nil, err
	}
	limit := 100
	if p.Limit != nil {
		if *p.Limit < 0 {
			return nil, nil, errorf(CodeInvalidRequest, "events.history limit %d is negative", *p.Limit)
		}
		if *p.Limit > 0 {
			limit = *p.Limit
		}
	}
	records := []Envelope{}
	err = b.replay(ctx, s, max(s.seq-int64(limit), 0), func(ev Envelope) bool {
		records = append(records, ev)
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return Records{Records: records}, nil, nil
}

func (b *Broker) eventsStream(ctx context.Context, c *conn, env Envelope) (any, func(), error) {
	s, p, err := inSession[struct {
		Follow bool   `json:"follow"`
		After  *int64 `json:"after"`
		Agent  string `json:"agent"`
	}](b, ctx, env, true)
	if err != nil {
		return nil, nil, err
	}
	if !p.Follow {
		var after int64
		if p.After != nil {
			after = *p.After
		}
		records := []Envelope{}
		err := b.replay(ctx, s, after, func(ev Envelope) bool {
			if p.Agent == "" || addressedTo(ev, p.Agent) {
				records = append(records, ev)
			}
			return true
		})
		if err != nil {
			return nil, nil, err
		}
		return Records{Records: records}, nil, nil
	}
	if c == nil {
		return nil, nil, errorf(CodeInvalidRequest,
			"events.stream with follow needs a socket connection; over HTTP use GET /v1/sessions/%s/events", s.info.ID)
	}
	post := func() {
		st := &stream{out: c.out, corr: env.ID, agent: p.Agent}
		if p.After != nil {
			if err := b.replay(ctx, s, *p.After, st.deliver); err != nil {
				b.opts.Logger.Warn("replay for events.stream", "session", s.info.ID, "err", err)
				return
			}
		}
		if s.info.Status != "closed" {
			s.streams[st] = struct{}{}
		}
	}
	return StreamStarted{Follow: true, Seq: s.seq}, post, nil
}
