package envelope

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/internal/fastjson"
)

// Where the face keeps its state on the bus. Everything a broker knows is
// read from these topics, so brokers on one bus serve the same sessions.
const (
	// EventsTopicPrefix + a session id is that session's event log, an
	// append-only topic: an event's seq is its offset there.
	EventsTopicPrefix = "session:"
	// IndexTopic is the append-only list of session.created and
	// session.closed events, from which brokers learn the sessions.
	IndexTopic = "session-index"
	// SessionInfoTopicPrefix + a session id retains the session's
	// SessionInfo, for readers that do not replay its log.
	SessionInfoTopicPrefix = "session-info:"
	// AgentsTopicPrefix + a session id retains its AgentList.
	AgentsTopicPrefix = "session-agents:"

	originHeader = "weave-envelope-origin"
)

// AppendOnlyTopics are the patterns the face needs append-only.
func AppendOnlyTopics() []string { return []string{EventsTopicPrefix + "*", IndexTopic} }

// RetainedTopics are the patterns the face needs retained.
func RetainedTopics() []string {
	return []string{SessionInfoTopicPrefix + "*", AgentsTopicPrefix + "*"}
}

// checkTopics fails early, with the fix, when the bus does not keep the
// face's topics.
func (b *Broker) checkTopics(ctx context.Context) error {
	if err := b.bus.Replay(ctx, IndexTopic, ^uint64(0), func(uint64, bus.Message) bool { return false }); err != nil {
		return fmt.Errorf("the v1 envelope face needs append-only topics %s on the bus: %w", strings.Join(AppendOnlyTopics(), ", "), err)
	}
	if _, _, err := b.bus.Retained(ctx, SessionInfoTopicPrefix+"check"); err != nil {
		return fmt.Errorf("the v1 envelope face needs retained topics %s on the bus: %w", strings.Join(RetainedTopics(), ", "), err)
	}
	return nil
}

// onBusEvent follows what other brokers write: it reads the topic up to
// its end, in offset order. Its own writes are applied when made.
func (b *Broker) onBusEvent(ctx context.Context, m bus.Message) (bus.Ack, error) {
	if m.Headers[originHeader] == b.origin {
		return bus.Ack{}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.Topic == IndexTopic {
		if err := b.catchUpIndex(ctx); err != nil {
			b.opts.Logger.Warn("read the session index", "err", err)
		}
		return bus.Ack{}, nil
	}
	id := strings.TrimPrefix(m.Topic, EventsTopicPrefix)
	s := b.sessions[id]
	if s == nil {
		if err := b.catchUpIndex(ctx); err != nil {
			b.opts.Logger.Warn("read the session index", "err", err)
		}
		if s = b.sessions[id]; s == nil {
			return bus.Ack{}, nil // forgotten, or not ours to follow
		}
	}
	if err := b.catchUp(ctx, s); err != nil {
		b.opts.Logger.Warn("read session events", "session", id, "err", err)
	}
	return bus.Ack{}, nil
}

// catchUpIndex applies the session index entries not yet applied. b.mu is
// held.
func (b *Broker) catchUpIndex(ctx context.Context) error {
	var ferr error
	err := b.bus.Replay(ctx, IndexTopic, b.index+1, func(off uint64, m bus.Message) bool {
		var ev Envelope
		if err := unmarshalEnvelope(m.Payload, &ev); err != nil {
			b.opts.Logger.Warn("skip a malformed session index entry", "offset", off, "err", err)
		} else if ferr = b.applyIndex(ctx, ev); ferr != nil {
			return false
		}
		b.index = off
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("read the session index from the bus: %w", err)
	}
	return nil
}

// indexEntry appends ev (session.created or session.closed) to the index
// and applies it. b.mu is held.
func (b *Broker) indexEntry(ctx context.Context, ev Envelope) error {
	raw, err := marshalEnvelope(&ev)
	if err != nil {
		return err
	}
	res, err := b.bus.Publish(bus.NoWait(ctx), bus.Message{ID: NewID(), Topic: IndexTopic, Payload: raw, Headers: b.hdr})
	if err != nil {
		return fmt.Errorf("record %s in the session index: %w", ev.Type, err)
	}
	if res.Offset == b.index+1 {
		b.index = res.Offset
		return b.applyIndex(ctx, ev)
	}
	return b.catchUpIndex(ctx)
}

func (b *Broker) applyIndex(ctx context.Context, ev Envelope) error {
	var info SessionInfo
	if err := json.Unmarshal(ev.Payload, &info); err != nil || info.ID == "" {
		return nil
	}
	switch ev.Type {
	case TypeSessionCreated:
		if _, ok := b.sessions[info.ID]; ok {
			return nil
		}
		s := newSessionState(info, b.opts.IdempotencyWindow)
		b.sessions[info.ID] = s
		b.order = append(b.order, info.ID)
		return b.catchUp(ctx, s)
	case TypeSessionClosed:
		if _, ok := b.sessions[info.ID]; !ok || slices.Contains(b.closed, info.ID) {
			return nil
		}
		b.closed = append(b.closed, info.ID)
		b.forgetClosed(ctx)
	}
	return nil
}

// catchUp applies the session's events not yet applied, in order. b.mu is
// held.
func (b *Broker) catchUp(ctx context.Context, s *session) error {
	if s.applyNext == nil {
		s.applyNext = func(off uint64, m bus.Message) bool {
			var ev Envelope
			if err := unmarshalEnvelope(m.Payload, &ev); err != nil {
				b.opts.Logger.Warn("skip a malformed session event", "session", s.info.ID, "offset", off, "err", err)
				s.seq = int64(off)
				return true
			}
			ev.Seq = int64(off)
			b.apply(s, ev)
			return true
		}
	}
	if err := b.bus.Replay(ctx, s.topic, uint64(s.seq)+1, s.applyNext); err != nil {
		return fmt.Errorf("read session %s from the bus: %w", s.info.ID, err)
	}
	return nil
}

// replay calls fn for the session's events after seq after, up to the last
// one applied, until fn returns false. b.mu is held.
func (b *Broker) replay(ctx context.Context, s *session, after int64, fn func(Envelope) bool) error {
	last := s.seq
	if after >= last {
		return nil
	}
	err := b.bus.Replay(ctx, s.topic, uint64(after)+1, func(off uint64, m bus.Message) bool {
		if int64(off) > last {
			return false
		}
		var ev Envelope
		if err := unmarshalEnvelope(m.Payload, &ev); err != nil {
			return true // logged when it was applied
		}
		ev.Seq = int64(off)
		return fn(ev)
	})
	if err != nil {
		return fmt.Errorf("read session %s from the bus: %w", s.info.ID, err)
	}
	return nil
}

// apply makes ev, the session's next event, take effect: it reaches the
// streams and agents, then changes the session's state. Every broker on
// the bus applies the same events in the same order. b.mu is held.
func (b *Broker) apply(s *session, ev Envelope) {
	s.seq = ev.Seq
	for st := range s.streams {
		if !st.deliver(ev) {
			delete(s.streams, st)
		}
	}
	b.deliverToAgents(s, ev)

	switch ev.Type {
	case TypeSessionCreated:
		var info SessionInfo
		if json.Unmarshal(ev.Payload, &info) == nil && info.ID == s.info.ID {
			s.info = info
		}
	case TypeSessionClosed:
		var info SessionInfo
		if json.Unmarshal(ev.Payload, &info) == nil && info.ID == s.info.ID {
			s.info = info
		}
		s.info.Status = "closed"
		for st := range s.streams {
			if st.sse {
				st.out.finish()
			}
			delete(s.streams, st)
		}
	case TypeAgentAdded:
		var a AgentInfo
		if json.Unmarshal(ev.Payload, &a) == nil && a.ID != "" && s.agent(a.ID) == nil {
			s.agents = append(s.agents, &agent{info: AgentInfo{ID: a.ID, Name: a.Name}, sinks: make(map[*conn]struct{})})
		}
	case TypeAgentUpdated:
		var a AgentInfo
		if json.Unmarshal(ev.Payload, &a) == nil {
			if x := s.agent(a.ID); x != nil {
				x.info.Name = a.Name
			}
		}
	case TypeAgentRemoved:
		var a AgentInfo
		if json.Unmarshal(ev.Payload, &a) == nil {
			s.agents = slices.DeleteFunc(s.agents, func(x *agent) bool { return x.info.ID == a.ID })
		}
	case TypeActionSubmit:
		b.applySubmit(s, ev)
	case TypeActionResult:
		b.applyResult(s, ev)
	case TypeRelayDone:
		var p RelayDone
		if json.Unmarshal(ev.Payload, &p) == nil {
			if r := s.relays[p.RelayID]; r != nil {
				r.done = true
			}
		}
	}
}

// applySubmit remembers the actions of one per-target action.submit event
// and the conversation and relay they belong to.
func (b *Broker) applySubmit(s *session, ev Envelope) {
	var p Submit
	if json.Unmarshal(ev.Payload, &p) != nil {
		return
	}
	if p.Context != nil && p.Context.ContextID != "" {
		if _, known := s.owners[p.Context.ContextID]; !known {
			owner := p.Context.OwnerID
			if owner == "" {
				owner = ev.Src
			}
			s.owners[p.Context.ContextID] = owner
		}
	}
	evp := &ev
	for _, a := range p.Actions {
		s.remember(&actionState{action: a, groupID: p.GroupID, submitter: ev.Src, target: ev.Dst, event: evp})
		if a.RelayID != "" && !isReply(a) { // replies are correlated, not part of it
			if s.relays[a.RelayID] == nil {
				s.relays[a.RelayID] = &relayState{owner: ev.Src}
			}
		}
	}
}

// applyResult moves an action on. A result from the bus for an action it
// never delivered is the loop guard's rejection of a reply: it is
// remembered so that the action id stays taken.
func (b *Broker) applyResult(s *session, ev Envelope) {
	var p Result
	if json.Unmarshal(ev.Payload, &p) != nil {
		return
	}
	st := s.actions[p.GroupID+"\x00"+p.ActionID]
	if st == nil {
		if ev.Src == BusSrc && p.Status == ResultRejected {
			s.remember(&actionState{action: Action{Type: ActionMessage, Kind: KindReply, ActionID: p.ActionID, ActionIndex: p.ActionIndex},
				groupID: p.GroupID, submitter: ev.Dst, status: ResultRejected, terminal: true})
		}
		return
	}
	if st.terminal {
		return
	}
	if !Terminal(p.Status) {
		st.status = p.Status
		return
	}
	s.finish(st, p.Status)
	s.compactActions()
}

// snapshot writes the session's info and agents to their retained topics.
// b.mu is held.
func (b *Broker) snapshot(ctx context.Context, s *session) {
	agents := make([]AgentInfo, 0, len(s.agents))
	for _, a := range s.agents {
		agents = append(agents, a.info)
	}
	for topic, v := range map[string]any{
		SessionInfoTopicPrefix + s.info.ID: s.info,
		AgentsTopicPrefix + s.info.ID:      AgentList{Agents: agents},
	} {
		raw, err := fastjson.Marshal(v)
		if err == nil {
			_, err = b.bus.Publish(bus.NoWait(ctx), bus.Message{Topic: topic, Payload: raw, Headers: b.hdr})
		}
		if err != nil {
			b.opts.Logger.Warn("write the session snapshot", "topic", topic, "err", err)
		}
	}
}

// forgetter is a bus that can drop a topic's stored messages.
type forgetter interface {
	Forget(ctx context.Context, topic string) error
}

// forgetClosed drops the oldest closed sessions beyond KeepClosed, and
// their topics when the bus can forget them, which keeps a long-lived bus
// bounded. Every broker does the same at the same index entry.
func (b *Broker) forgetClosed(ctx context.Context) {
	over := len(b.closed) - b.opts.KeepClosed
	if over <= 0 {
		return
	}
	f, _ := b.bus.(forgetter)
	gone := make(map[string]bool, over)
	for _, id := range b.closed[:over] {
		gone[id] = true
		delete(b.sessions, id)
		if f == nil {
			continue
		}
		for _, topic := range []string{EventsTopicPrefix + id, SessionInfoTopicPrefix + id, AgentsTopicPrefix + id} {
			if err := f.Forget(ctx, topic); err != nil {
				b.opts.Logger.Warn("forget a closed session's topic", "topic", topic, "err", err)
			}
		}
	}
	b.closed = append(b.closed[:0:0], b.closed[over:]...)
	b.order = slices.DeleteFunc(b.order, func(id string) bool { return gone[id] })
}
