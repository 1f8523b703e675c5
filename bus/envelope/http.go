package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weavehq/weave/bus/guard"
)

// Handler returns the HTTP face:
//
//	POST /v1/envelopes              one envelope in, its reply envelope out
//	GET  /v1/sessions/{id}/events   the session's events as server-sent events
//
// and the routes existing clients use: GET /api/health, GET and POST
// /api/sessions, GET /api/sessions/{id}/agents, POST
// /api/sessions/{id}/messages and GET /api/sessions/{id}/events.
//
// An event stream starts with live events; Last-Event-ID (or ?after=N)
// replays the retained events after that seq first, and ?after=0 replays all.
// ?agent=ID keeps only the events routed to that agent, which is how an
// agent without a socket receives its actions.
func (b *Broker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/envelopes", b.httpEnvelope)
	mux.HandleFunc("GET /v1/sessions/{id}/events", b.httpEvents)
	mux.HandleFunc("GET /api/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /api/sessions", b.apiListSessions)
	mux.HandleFunc("POST /api/sessions", b.apiCreateSession)
	mux.HandleFunc("GET /api/sessions/{id}/agents", b.apiListAgents)
	mux.HandleFunc("POST /api/sessions/{id}/messages", b.apiPostMessage)
	mux.HandleFunc("GET /api/sessions/{id}/events", b.httpEvents)
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// httpStatus maps a reply to the HTTP status that carries it.
func httpStatus(reply Envelope) int {
	if reply.Status != StatusError || reply.Error == nil {
		return http.StatusOK
	}
	switch reply.Error.Code {
	case CodeInvalidJSON, CodeInvalidRequest, CodeUnknownType:
		return http.StatusBadRequest
	case CodeNotFound:
		return http.StatusNotFound
	case CodeForbidden:
		return http.StatusForbidden
	case CodeConflict:
		return http.StatusConflict
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeLimit:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// readBody reads at most MaxFrameBytes of the request body.
func (b *Broker) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(b.opts.MaxFrameBytes)))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, errorf(CodeTooLarge, "body longer than %d bytes; send smaller envelopes", b.opts.MaxFrameBytes)
	}
	if err != nil {
		return nil, errorf(CodeInvalidRequest, "read body: %v", err)
	}
	return data, nil
}

func (b *Broker) httpEnvelope(w http.ResponseWriter, r *http.Request) {
	data, err := b.readBody(w, r)
	if err != nil {
		reply := b.errorReply(Envelope{}, err)
		writeJSON(w, httpStatus(reply), reply)
		return
	}
	env, err := parseEnvelope(data)
	if err != nil {
		reply := b.errorReply(env, err)
		writeJSON(w, httpStatus(reply), reply)
		return
	}
	if err := b.authorize(r, env.Type); err != nil {
		unauthorized(w)
		writeJSON(w, http.StatusUnauthorized, b.errorReply(env, err))
		return
	}
	reply := b.serve(r.Context(), nil, env)
	writeJSON(w, httpStatus(reply), reply)
}

// httpEvents streams a session's events as server-sent events: each event's
// id is its seq, its event name its type, its data the envelope.
func (b *Broker) httpEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after := int64(-1)
	from := r.Header.Get("Last-Event-ID")
	if q := r.URL.Query().Get("after"); from == "" && q != "" {
		from = q
	}
	if from != "" {
		n, err := strconv.ParseInt(from, 10, 64)
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{
				"error": fmt.Sprintf("Last-Event-ID %q is not an event seq; send the id of the last event you saw", from)})
			return
		}
		after = n
	}
	if b.opts.Token != "" && b.opts.MaxGuestStreams > 0 && !guard.Authorized(r, b.opts.Token) {
		if !b.reserveGuestStream() {
			w.Header().Set("Retry-After", "5")
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": fmt.Sprintf(
				"the bus holds its limit of %d event streams without the bus token (bus.max_guest_connections; the rest of bus.max_connections is kept for token holders): close some, or send Authorization: Bearer <token>", b.opts.MaxGuestStreams)})
			return
		}
		defer b.guestStreams.Add(-1)
	}
	rc := http.NewResponseController(w)
	out := newOutbox(b.opts.QueueLen)
	// A consumer that cannot keep up is cut off; it resumes by Last-Event-ID.
	out.onKill = func() { _ = rc.SetWriteDeadline(time.Now()) }
	st := &stream{out: out, sse: true, agent: r.URL.Query().Get("agent")}
	closed, err := b.subscribe(r.Context(), id, after, st)
	if err != nil {
		var e *Error
		errors.As(err, &e)
		code := http.StatusNotFound
		if e.Code == CodeSlowConsumer {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, map[string]string{"error": e.Message})
		return
	}
	defer b.unsubscribe(id, st)
	if closed {
		out.finish()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	write := func(e Envelope) bool {
		data, err := json.Marshal(e)
		if err != nil {
			return false
		}
		_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data)
		return err == nil
	}
	writeAll := func() bool {
		for _, e := range out.take() {
			if !write(e) {
				return false
			}
		}
		return rc.Flush() == nil
	}
	for {
		select {
		case <-out.notify:
			if !writeAll() {
				return
			}
		case <-out.finished:
			writeAll()
			return
		case <-out.dead:
			if out.isSlow() {
				b.opts.Logger.Warn("cut off an event stream that fell behind", "session", id, "queue", b.opts.QueueLen)
			}
			return
		case <-r.Context().Done():
			return
		}
	}
}

// ReadOnly reports whether a command only reads (lists sessions or agents,
// reads or follows events): the commands a peer without the bus token may
// send over HTTP when the face has one (Options.Token). Every other command
// creates, changes or closes sessions, agents, messages, actions or relays,
// which is how a peer steers what agents do.
func ReadOnly(typ string) bool {
	switch typ {
	case TypeSessionList, TypeAgentList, TypeEventsHistory, TypeEventsStream:
		return true
	}
	return false
}

// authorize checks that a request may run a command of type typ: a read, or
// one that carries the bus token when the face has one.
func (b *Broker) authorize(r *http.Request, typ string) error {
	if ReadOnly(typ) || guard.Authorized(r, b.opts.Token) {
		return nil
	}
	where := "the bus token"
	if b.opts.TokenFile != "" {
		where = "the bus token (in " + b.opts.TokenFile + ")"
	}
	return errorf(CodeForbidden, "%s changes what a session's agents do and needs %s: send Authorization: Bearer <token>, or use the Unix socket", typ, where)
}

// apiAuthorized is authorize for the /api routes, answering the refusal.
func (b *Broker) apiAuthorized(w http.ResponseWriter, r *http.Request, typ string) bool {
	err := b.authorize(r, typ)
	if err == nil {
		return true
	}
	var e *Error
	errors.As(err, &e)
	unauthorized(w)
	writeJSON(w, http.StatusUnauthorized, map[string]string{"error": e.Message})
	return false
}

func unauthorized(w http.ResponseWriter) { guard.Challenge(w) }

// apiSrc is the src of envelopes made for the /api routes.
const apiSrc = "http"

func (b *Broker) apiCall(ctx context.Context, typ, sess string, payload any) Envelope {
	env, err := New(typ, apiSrc, payload)
	if err != nil {
		return b.errorReply(Envelope{Type: typ}, err)
	}
	env.Session = sess
	return b.serve(ctx, nil, env)
}

func writeAPIError(w http.ResponseWriter, reply Envelope) {
	writeJSON(w, httpStatus(reply), map[string]string{"error": reply.Error.Message})
}

func (b *Broker) apiListSessions(w http.ResponseWriter, r *http.Request) {
	reply := b.apiCall(r.Context(), TypeSessionList, "", nil)
	if reply.Err() != nil {
		writeAPIError(w, reply)
		return
	}
	writeJSON(w, http.StatusOK, reply.Payload)
}

func (b *Broker) apiCreateSession(w http.ResponseWriter, r *http.Request) {
	if !b.apiAuthorized(w, r, TypeSessionCreate) {
		return
	}
	data, err := b.readBody(w, r)
	if err != nil {
		writeAPIError(w, b.errorReply(Envelope{}, err))
		return
	}
	var p struct {
		Name string `json:"name"`
	}
	if len(strings.TrimSpace(string(data))) > 0 {
		if err := json.Unmarshal(data, &p); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("body is not a JSON object like {\"name\": \"...\"}: %v", err)})
			return
		}
	}
	reply := b.apiCall(r.Context(), TypeSessionCreate, "", p)
	if reply.Err() != nil {
		writeAPIError(w, reply)
		return
	}
	writeJSON(w, http.StatusCreated, reply.Payload)
}

func (b *Broker) apiListAgents(w http.ResponseWriter, r *http.Request) {
	reply := b.apiCall(r.Context(), TypeAgentList, r.PathValue("id"), nil)
	if reply.Err() != nil {
		writeAPIError(w, reply)
		return
	}
	writeJSON(w, http.StatusOK, reply.Payload)
}

func (b *Broker) apiPostMessage(w http.ResponseWriter, r *http.Request) {
	if !b.apiAuthorized(w, r, TypeMessageCreated) {
		return
	}
	data, err := b.readBody(w, r)
	if err != nil {
		writeAPIError(w, b.errorReply(Envelope{}, err))
		return
	}
	var p struct {
		Text     string   `json:"text"`
		AgentIDs []string `json:"agent_ids"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "missing text or agent_ids"})
		return
	}
	if strings.TrimSpace(p.Text) == "" || len(p.AgentIDs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "missing text or agent_ids"})
		return
	}
	sess := r.PathValue("id")
	listed := b.apiCall(r.Context(), TypeAgentList, sess, nil)
	if listed.Err() != nil {
		writeAPIError(w, listed)
		return
	}
	var agents AgentList
	if err := listed.Decode(&agents); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	known := make(map[string]bool, len(agents.Agents))
	for _, a := range agents.Agents {
		known[a.ID] = true
	}
	var ids []string
	for _, dst := range p.AgentIDs {
		if !known[dst] {
			continue
		}
		env, err := New(TypeMessageCreated, apiSrc, Message{Text: p.Text, Kind: KindUser})
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		env.Session, env.Dst = sess, dst
		if reply := b.serve(r.Context(), nil, env); reply.Err() != nil {
			writeAPIError(w, reply)
			return
		}
		ids = append(ids, env.ID)
	}
	if len(ids) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "agent_ids not found"})
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"status": "accepted", "message_ids": ids})
}

// reserveGuestStream takes one of the event streams kept for requests
// without the token, or reports that they are all taken.
func (b *Broker) reserveGuestStream() bool {
	for {
		n := b.guestStreams.Load()
		if n >= int64(b.opts.MaxGuestStreams) {
			return false
		}
		if b.guestStreams.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
