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

func (b *Broker) sessionCreate(ctx context.Context, env Envelope) (any, string, error) {
	var p struct {
		Name string `json:"name"`
	}
	if err := decode(env, &p); err != nil {
		return nil, "", err
	}
	now := FormatTime(b.opts.Now())
	s := &session{
		info:       SessionInfo{ID: NewID(), Name: strings.TrimSpace(p.Name), Status: "open", CreatedAt: now, UpdatedAt: now},
		streams:    make(map[*stream]struct{}),
		idem:       newIdemWindow(b.opts.IdempotencyWindow),
		actions:    make(map[string]*actionState),
		actionByID: make(map[string]*actionState),
		keepDone:   b.opts.IdempotencyWindow,
		groups:     make(map[string]int),
		owners:     make(map[string]string),
	}
	b.sessions[s.info.ID] = s
	b.order = append(b.order, s.info.ID)
	b.emit(ctx, s, Envelope{Type: TypeSessionCreated, Src: env.Src, Payload: mustJSON(s.info)})
	return s.info, s.info.ID, nil
}

func (b *Broker) sessionList(env Envelope) (any, error) {
	out := make([]SessionInfo, 0, len(b.order))
	for _, id := range b.order {
		out = append(out, b.sessions[id].info)
	}
	return SessionList{Sessions: out}, nil
}

func (b *Broker) sessionClose(ctx context.Context, env Envelope) (any, error) {
	s, err := b.lookup(env, true)
	if err != nil {
		return nil, err
	}
	if s.info.Status == "closed" {
		return s.info, nil
	}
	// Nothing is left hanging: unfinished actions end with an error result.
	b.failPending(ctx, s, func(*actionState) bool { return true }, "session closed before the action finished")
	s.info.Status = "closed"
	s.info.UpdatedAt = FormatTime(b.opts.Now())
	b.closed = append(b.closed, s.info.ID)
	b.emit(ctx, s, Envelope{Type: TypeSessionClosed, Src: env.Src, Payload: mustJSON(s.info)})
	for st := range s.streams {
		if st.sse {
			st.out.finish()
		}
		delete(s.streams, st)
	}
	b.forgetClosed()
	return s.info, nil
}

// forgetClosed drops the oldest closed sessions beyond KeepClosed.
func (b *Broker) forgetClosed() {
	over := len(b.closed) - b.opts.KeepClosed
	if over <= 0 {
		return
	}
	gone := make(map[string]bool, over)
	for _, id := range b.closed[:over] {
		gone[id] = true
		delete(b.sessions, id)
	}
	b.closed = append(b.closed[:0:0], b.closed[over:]...)
	b.order = slices.DeleteFunc(b.order, func(id string) bool { return gone[id] })
}

// failPending ends every unfinished action that match selects with an error
// result from the bus to its submitter.
func (b *Broker) failPending(ctx context.Context, s *session, match func(*actionState) bool, detail string) {
	for _, st := range s.actionOrder {
		if st.terminal || !match(st) {
			continue
		}
		s.finish(st, ResultError)
		b.emit(ctx, s, Envelope{
			Type: TypeActionResult, Src: BusSrc, Dst: st.submitter,
			Payload: mustJSON(Result{GroupID: st.groupID, ActionID: st.action.ActionID,
				ActionIndex: IntPtr(st.action.Index()), Status: ResultError, Detail: detail}),
		})
	}
	s.compactActions()
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
	s, err := b.lookup(env, false)
	if err != nil {
		return nil, nil, err
	}
	var p agentPayload
	if err := decode(env, &p); err != nil {
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
		a = &agent{info: AgentInfo{ID: id, Name: name}, sinks: make(map[*conn]struct{})}
		s.agents = append(s.agents, a)
		b.emit(ctx, s, Envelope{Type: TypeAgentAdded, Src: env.Src, Payload: mustJSON(a.info)})
	case name != "" && name != a.info.Name:
		a.info.Name = name
		b.emit(ctx, s, Envelope{Type: TypeAgentUpdated, Src: env.Src, Payload: mustJSON(agentPayload{ID: id, Name: name})})
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

func (b *Broker) agentRemove(ctx context.Context, env Envelope) (any, error) {
	s, err := b.lookup(env, false)
	if err != nil {
		return nil, err
	}
	var p agentPayload
	if err := decode(env, &p); err != nil {
		return nil, err
	}
	if p.ID == "" {
		return nil, errorf(CodeInvalidRequest, "agent.remove needs payload.id, the agent to remove")
	}
	a := s.agent(p.ID)
	if a == nil {
		return nil, errorf(CodeNotFound, "no agent %q in session %q (agents: %s)", p.ID, s.info.ID, s.agentIDs())
	}
	b.failPending(ctx, s, func(st *actionState) bool { return st.target == a.info.ID },
		fmt.Sprintf("agent %q was removed before finishing the action", a.info.ID))
	b.emit(ctx, s, Envelope{Type: TypeAgentRemoved, Src: env.Src, Payload: mustJSON(AgentInfo{ID: a.info.ID, Name: a.info.Name})})
	for i, x := range s.agents {
		if x == a {
			s.agents = append(s.agents[:i], s.agents[i+1:]...)
			break
		}
	}
	return AgentInfo{ID: a.info.ID, Name: a.info.Name}, nil
}

func (b *Broker) agentList(env Envelope) (any, error) {
	s, err := b.lookup(env, true)
	if err != nil {
		return nil, err
	}
	out := make([]AgentInfo, 0, len(s.agents))
	for _, a := range s.agents {
		info := a.info
		if len(a.sinks) > 0 {
			info.Status = "connected"
		}
		out = append(out, info)
	}
	return AgentList{Agents: out}, nil
}

func (b *Broker) agentUpdate(ctx context.Context, env Envelope) (any, error) {
	s, err := b.lookup(env, false)
	if err != nil {
		return nil, err
	}
	var p agentPayload
	if err := decode(env, &p); err != nil {
		return nil, err
	}
	if p.ID == "" {
		return nil, errorf(CodeInvalidRequest, "agent.update needs payload.id (your own agent id)")
	}
	if p.ID != env.Src {
		return nil, errorf(CodeForbidden, "agent.update: payload.id %q must equal src %q; agents update only themselves", p.ID, env.Src)
	}
	name := strings.TrimSpace(p.Name)
	if name == "" {
		return nil, errorf(CodeInvalidRequest, "agent.update needs a non-empty payload.name")
	}
	a := s.agent(p.ID)
	if a == nil {
		return nil, errorf(CodeNotFound, "no agent %q in session %q; join with agent.add first", p.ID, s.info.ID)
	}
	if other := s.nameTaken(name, p.ID); other != "" {
		return nil, errorf(CodeConflict, "agent name %q is taken by agent %q in this session; pick another name", name, other)
	}
	a.info.Name = name
	out := agentPayload{ID: p.ID, Name: name}
	b.emit(ctx, s, Envelope{Type: TypeAgentUpdated, Src: env.Src, Payload: mustJSON(out)})
	return out, nil
}

func validMessageKind(k string) bool {
	switch k {
	case KindUser, KindReply, KindControl, KindSystem:
		return true
	}
	return false
}

func (b *Broker) messageCreated(ctx context.Context, env Envelope) (any, error) {
	s, err := b.lookup(env, false)
	if err != nil {
		return nil, err
	}
	var p struct {
		Message
		PayloadRef json.RawMessage `json:"payload_ref"`
	}
	if err := decode(env, &p); err != nil {
		return nil, err
	}
	if len(p.PayloadRef) > 0 {
		return nil, errorf(CodeInvalidRequest, "message.created carries its text inline in payload.text; payload_ref is not allowed")
	}
	if strings.TrimSpace(p.Text) == "" {
		return nil, errorf(CodeInvalidRequest, "message.created needs a non-empty payload.text")
	}
	if p.Kind != "" && !validMessageKind(p.Kind) {
		return nil, errorf(CodeInvalidRequest, "message kind %q is not one of user, reply, control, system", p.Kind)
	}
	ev := Envelope{Type: TypeMessageCreated, ID: env.ID, Src: env.Src, Payload: env.Payload}
	if env.Dst != "" {
		a, err := s.resolve(env.Dst)
		if err != nil {
			return nil, err
		}
		ev.Dst = a.info.ID
	}
	ev = b.emit(ctx, s, ev)
	return MessageRecorded{MessageID: ev.ID, Seq: ev.Seq}, nil
}

func (b *Broker) actionSubmit(ctx context.Context, env Envelope) (any, error) {
	s, err := b.lookup(env, false)
	if err != nil {
		return nil, err
	}
	var p Submit
	if err := decode(env, &p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.GroupID) == "" {
		return nil, errorf(CodeInvalidRequest, "action.submit needs payload.group_id")
	}
	if s.groups[p.GroupID] > 0 {
		return nil, errorf(CodeConflict, "group_id %q was already submitted under another idempotency_key; use a new group_id", p.GroupID)
	}
	if len(p.Actions) == 0 {
		return nil, errorf(CodeInvalidRequest, "action.submit needs a non-empty payload.actions")
	}
	targets := make([]*agent, len(p.Actions))
	ids := make(map[string]bool)
	indexes := make(map[int]bool)
	for i, a := range p.Actions {
		if err := checkAction(a); err != nil {
			return nil, errorf(CodeInvalidRequest, "actions[%d]: %s", i, err.Message)
		}
		if ids[a.ActionID] {
			return nil, errorf(CodeInvalidRequest, "actions[%d]: action_id %q appears twice; each action needs its own id", i, a.ActionID)
		}
		if s.actionByID[a.ActionID] != nil {
			return nil, errorf(CodeConflict, "actions[%d]: action_id %q was used by an earlier action; action ids are unique", i, a.ActionID)
		}
		if indexes[*a.ActionIndex] {
			return nil, errorf(CodeInvalidRequest, "actions[%d]: action_index %d appears twice", i, *a.ActionIndex)
		}
		ids[a.ActionID], indexes[*a.ActionIndex] = true, true
		ag, err := s.resolve(a.Dst)
		if err != nil {
			return nil, &Error{Code: err.Code, Message: fmt.Sprintf("actions[%d]: %s", i, err.Message)}
		}
		targets[i] = ag
	}

	// Conversation ownership: the first relay in a conversation fixes its
	// owner, and only the owner relays in it afterwards.
	if p.Context != nil && p.Context.ContextID != "" {
		cid := p.Context.ContextID
		owner, known := s.owners[cid]
		if !known {
			owner = p.Context.OwnerID
			if owner == "" {
				owner = env.Src
			}
		}
		if p.Context.OwnerID != "" && p.Context.OwnerID != owner {
			return nil, errorf(CodeForbidden, "conversation %q is owned by %q, not %q; ownership does not transfer", cid, owner, p.Context.OwnerID)
		}
		if env.Src != owner {
			return nil, errorf(CodeForbidden, "only %q, the owner of conversation %q, relays in it; answer it with a reply instead", owner, cid)
		}
		s.owners[cid] = owner
	}

	// Loop guard: a reply to a reply is a ping-pong and is not relayed.
	rejected := make(map[int]string)
	for i, a := range p.Actions {
		if a.Type != ActionMessage || a.Kind != KindReply || a.ReplyToActionID == "" {
			continue
		}
		if prev := s.actionByID[a.ReplyToActionID]; prev != nil && prev.action.Type == ActionMessage && prev.action.Kind == KindReply {
			rejected[i] = fmt.Sprintf("loop guard: %q is itself a reply; replies are not re-relayed", a.ReplyToActionID)
		}
	}

	// One action.submit event per target, actions in their original order.
	var order []*agent
	perTarget := make(map[*agent][]int)
	for i, ag := range targets {
		if _, skip := rejected[i]; skip {
			continue
		}
		if _, ok := perTarget[ag]; !ok {
			order = append(order, ag)
		}
		perTarget[ag] = append(perTarget[ag], i)
	}
	targetIDs := make([]string, 0, len(order))
	for _, ag := range order {
		group := Submit{GroupID: p.GroupID, Context: p.Context, TaskID: p.TaskID}
		for _, i := range perTarget[ag] {
			group.Actions = append(group.Actions, p.Actions[i])
		}
		ev := Envelope{Type: TypeActionSubmit, Src: env.Src, Dst: ag.info.ID, Payload: mustJSON(group)}
		if len(order) == 1 {
			ev.ID = env.ID
		}
		ev = b.emit(ctx, s, ev)
		for _, i := range perTarget[ag] {
			s.remember(&actionState{action: p.Actions[i], groupID: p.GroupID, submitter: env.Src,
				target: ag.info.ID, event: &ev})
		}
		targetIDs = append(targetIDs, ag.info.ID)
	}
	rejectedIDs := []string{}
	for i, a := range p.Actions {
		detail, ok := rejected[i]
		if !ok {
			continue
		}
		s.remember(&actionState{action: a, groupID: p.GroupID, submitter: env.Src, target: targets[i].info.ID,
			status: ResultRejected, terminal: true})
		b.emit(ctx, s, Envelope{Type: TypeActionResult, Src: BusSrc, Dst: env.Src,
			Payload: mustJSON(Result{GroupID: p.GroupID, ActionID: a.ActionID, ActionIndex: a.ActionIndex,
				Status: ResultRejected, Detail: detail})})
		rejectedIDs = append(rejectedIDs, a.ActionID)
	}
	return SubmitRecorded{GroupID: p.GroupID, Targets: targetIDs, Rejected: rejectedIDs}, nil
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

func (b *Broker) actionResult(ctx context.Context, env Envelope) (any, error) {
	s, err := b.lookup(env, false)
	if err != nil {
		return nil, err
	}
	var p Result
	if err := decode(env, &p); err != nil {
		return nil, err
	}
	if p.GroupID == "" || p.ActionID == "" {
		return nil, errorf(CodeInvalidRequest, "action.result needs payload.group_id and payload.action_id")
	}
	if !validResultStatus(p.Status) {
		return nil, errorf(CodeInvalidRequest, "result status %q is not one of accepted, completed, blocked, queued, rejected, error", p.Status)
	}
	st := s.actions[p.GroupID+"\x00"+p.ActionID]
	if st == nil {
		return nil, errorf(CodeNotFound, "no action %q in group %q in session %q", p.ActionID, p.GroupID, s.info.ID)
	}
	if p.ActionIndex == nil {
		return nil, errorf(CodeInvalidRequest, "action.result needs payload.action_index (%d for action %q)", st.action.Index(), p.ActionID)
	}
	if *p.ActionIndex != st.action.Index() {
		return nil, errorf(CodeInvalidRequest, "action_index %d does not match action %q (index %d)", *p.ActionIndex, p.ActionID, st.action.Index())
	}
	if env.Src != st.target {
		return nil, errorf(CodeForbidden, "only %q, the action's target, reports results for action %q", st.target, p.ActionID)
	}
	if st.terminal {
		return nil, errorf(CodeConflict, "action %q already finished with %q; nothing follows a terminal status", p.ActionID, st.status)
	}
	if Terminal(p.Status) {
		s.finish(st, p.Status)
	} else {
		st.status = p.Status
	}
	if p.Data != nil && *p.Data == (ResultData{}) {
		p.Data = nil
	}
	b.emit(ctx, s, Envelope{Type: TypeActionResult, ID: env.ID, Src: env.Src, Dst: st.submitter, Payload: mustJSON(p)})
	if st.terminal {
		s.compactActions()
	}
	return ResultRecorded{ActionID: p.ActionID, Status: p.Status, Terminal: st.terminal}, nil
}

func (b *Broker) taskEvent(ctx context.Context, env Envelope) (any, error) {
	s, err := b.lookup(env, false)
	if err != nil {
		return nil, err
	}
	var p TaskUpdate
	if err := decode(env, &p); err != nil {
		return nil, err
	}
	if p.TaskID == "" {
		return nil, errorf(CodeInvalidRequest, "%s needs payload.task_id", env.Type)
	}
	status := TaskStatusDone
	if env.Type == TypeTaskUpdated {
		switch p.Status {
		case TaskStatusRunning, TaskStatusBlocked, TaskStatusReady, TaskStatusDone:
		default:
			return nil, errorf(CodeInvalidRequest, "task status %q is not one of running, blocked, ready, done", p.Status)
		}
		status = p.Status
	}
	ev := Envelope{Type: env.Type, ID: env.ID, Src: env.Src, Payload: env.Payload}
	if env.Dst != "" {
		a, err := s.resolve(env.Dst)
		if err != nil {
			return nil, err
		}
		ev.Dst = a.info.ID
	}
	b.emit(ctx, s, ev)
	return TaskRecorded{TaskID: p.TaskID, Status: status}, nil
}

func (b *Broker) eventsHistory(env Envelope) (any, error) {
	s, err := b.lookup(env, true)
	if err != nil {
		return nil, err
	}
	var p struct {
		Limit *int `json:"limit"`
	}
	if err := decode(env, &p); err != nil {
		return nil, err
	}
	limit := 100
	if p.Limit != nil {
		if *p.Limit < 0 {
			return nil, errorf(CodeInvalidRequest, "events.history limit %d is negative", *p.Limit)
		}
		if *p.Limit > 0 {
			limit = *p.Limit
		}
	}
	from := max(len(s.log)-limit, 0)
	return Records{Records: append([]Envelope{}, s.log[from:]...)}, nil
}

func (b *Broker) eventsStream(c *conn, env Envelope) (any, func(), error) {
	s, err := b.lookup(env, true)
	if err != nil {
		return nil, nil, err
	}
	var p struct {
		Follow bool   `json:"follow"`
		After  *int64 `json:"after"`
		Agent  string `json:"agent"`
	}
	if err := decode(env, &p); err != nil {
		return nil, nil, err
	}
	if !p.Follow {
		var after int64
		if p.After != nil {
			after = *p.After
		}
		records := []Envelope{}
		for _, ev := range s.log {
			if ev.Seq > after && (p.Agent == "" || addressedTo(ev, p.Agent)) {
				records = append(records, ev)
			}
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
			for _, ev := range s.log {
				if ev.Seq > *p.After && !st.deliver(ev) {
					return
				}
			}
		}
		if s.info.Status != "closed" {
			s.streams[st] = struct{}{}
		}
	}
	return StreamStarted{Follow: true, Seq: s.seq}, post, nil
}
