// Package modeltest is a fake model server for tests and for people writing
// hooks and plugins: an HTTP server that speaks the OpenAI Chat Completions
// and Anthropic Messages wire formats (JSON answers and SSE streams, tool
// calls, usage with cache tokens, errors with status codes and Retry-After),
// answers from a script of turns, and records every request.
//
//	srv := modeltest.NewServer(t,
//		modeltest.Turn{ToolCalls: []modeltest.ToolCall{{Name: "read", Args: `{"path":"go.mod"}`}}},
//		modeltest.Turn{Text: "It is module example.com/x."},
//	)
//	// model.base_url: srv.OpenAIURL() for provider openai, srv.URL for anthropic.
//
// Each request, whatever its format, takes the next turn it matches (a turn
// may be kept for an agent, for the answer to a tool result, or for any
// request whose body contains a text), else a default turn, which is never
// used up. A request nothing is left for is answered 500 with
// x-should-retry: false, so that SDK clients fail at once and say so. A turn's Fault breaks its answer as
// broken or hostile endpoints do (fault.go): without end, huge, cut, dropped
// or garbage. The command cmd/fakemodel serves a script from a JSON file.
package modeltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Turn is one scripted answer.
type Turn struct {
	// Text is the assistant's text; streamed a word at a time.
	Text string `json:"text,omitempty"`
	// Thinking, in an Anthropic answer, comes first as a thinking block
	// with a made-up signature, as extended thinking answers; the OpenAI
	// format leaves it out.
	Thinking string `json:"thinking,omitempty"`
	// ToolCalls are the tool calls the answer asks for, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Usage is reported as the provider would; nil reports a rough count
	// of the request and the answer.
	Usage *Usage `json:"usage,omitempty"`
	// StopReason overrides the finish reason sent ("length", "eos", ...).
	StopReason string `json:"stop_reason,omitempty"`

	// Status, when set and not 200, answers with this HTTP error instead,
	// with Error as its message, ErrorType as its type or code (e.g.
	// "context_length_exceeded") and RetryAfter as the Retry-After header.
	Status     int    `json:"status,omitempty"`
	Error      string `json:"error,omitempty"`
	ErrorType  string `json:"error_type,omitempty"`
	RetryAfter string `json:"retry_after,omitempty"`

	// Dialect shapes an OpenAI-format answer as some compatible servers do:
	//   "ollama": each tool call whole in one delta, without index or id;
	//             finish_reason "stop" even with tool calls; no usage in
	//             streams, even when asked.
	//   "llamacpp": a tool call's id and name in its first delta and its
	//             arguments in pieces after, none of them with an index;
	//             no usage in streams.
	Dialect string `json:"dialect,omitempty"`
	// ChunkDelay waits between streamed chunks, e.g. "200ms".
	ChunkDelay Duration `json:"chunk_delay,omitempty"`
	// Hold, when not nil, pauses a stream after its first piece of text
	// until it is closed, so a test can see a delta before the turn ends.
	Hold <-chan struct{} `json:"-"`
	// Fault, when set, makes a streamed answer misbehave as broken or
	// hostile endpoints do (see the Fault constants); FaultChunk and
	// FaultBytes size it.
	Fault      string `json:"fault,omitempty"`
	FaultChunk int    `json:"fault_chunk,omitempty"`
	FaultBytes int    `json:"fault_bytes,omitempty"`
	// Match, when set, keeps the turn for a request whose body contains
	// it (a role's name in its system prompt, say), so that agents asked
	// at once each get their own answer whatever order they ask in.
	Match string `json:"match,omitempty"`
	// Agent, when set, keeps the turn for a request of that agent (its
	// system prompt says "You are Tapestry"), case-insensitive.
	Agent string `json:"agent,omitempty"`
	// AfterTool, when set, keeps the turn for a request whose last message
	// is a tool result containing this text: the answer to what a tool
	// call returned.
	AfterTool string `json:"after_tool,omitempty"`
	// Default makes the turn never used up: it answers every request no
	// other turn is left for (that it matches, with Match, Agent or
	// AfterTool), instead of the 500 that ends a script.
	Default bool `json:"default,omitempty"`
}

// ToolCall is one scripted tool call. Args is a JSON object; ID is made up
// when empty (call_N for OpenAI, toolu_N for Anthropic).
type ToolCall struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	Args string `json:"args,omitempty"`
}

// MarshalJSON writes Args as a JSON object rather than a string.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	type plain struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	p := plain{ID: c.ID, Name: c.Name}
	if c.Args != "" {
		p.Args = json.RawMessage(c.Args)
	}
	return json.Marshal(p)
}

// UnmarshalJSON reads Args as a JSON object or as a string holding one.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var p struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	c.ID, c.Name = p.ID, p.Name
	var s string
	switch {
	case len(p.Args) == 0 || string(p.Args) == "null":
		c.Args = ""
	case json.Unmarshal(p.Args, &s) == nil:
		c.Args = s
	default:
		// Compact, so the arguments go out as a model would send them.
		var b bytes.Buffer
		if err := json.Compact(&b, p.Args); err != nil {
			return fmt.Errorf("tool call %s: args: %w", p.Name, err)
		}
		c.Args = b.String()
	}
	return nil
}

// Usage is a turn's token count.
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
}

// Duration is a time.Duration written as a Go duration string in JSON.
type Duration time.Duration

// UnmarshalJSON reads "200ms" or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("chunk_delay: %w", err)
		}
		*d = Duration(v)
		return nil
	}
	var ms int64
	if err := json.Unmarshal(b, &ms); err != nil {
		return errors.New(`chunk_delay: want a duration like "200ms" or milliseconds`)
	}
	*d = Duration(time.Duration(ms) * time.Millisecond)
	return nil
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Request is one request the server received.
type Request struct {
	// Format is "openai" or "anthropic", from the path.
	Format string
	Path   string
	// Query is the request's raw query (Azure's api-version=...).
	Query string
	// Stream reports whether the client asked for an SSE stream.
	Stream bool
	// Model is the request's model field.
	Model string
	// APIKey is the key the client sent (Authorization bearer, or
	// x-api-key or api-key as Anthropic's and Azure's clients send it), so
	// a test can check which key was used.
	APIKey string
	// Header holds the request's headers.
	Header http.Header
	// Body is the request body as sent.
	Body json.RawMessage
	// Turn is the script index that answered it, -1 past the end.
	Turn int
	Time time.Time
}

// Decode unmarshals the body into v.
func (r Request) Decode(v any) error { return json.Unmarshal(r.Body, v) }

// Server is the fake model server.
type Server struct {
	// URL is the server's root, e.g. http://127.0.0.1:4321: Anthropic's
	// base URL. OpenAIURL adds /v1.
	URL string

	srv *httptest.Server

	mu    sync.Mutex
	turns []Turn
	used  []bool
	reqs  []Request
	// Log, when set, gets one line per request (the command prints them).
	log io.Writer
	// models is what GET .../models lists.
	models []string
	// faultBytes counts the bytes faulty turns wrote.
	faultBytes int64
}

// FaultBytesSent is how many bytes the answers of faulty turns (Turn.Fault)
// were written, in all: what a client could have read of them.
func (s *Server) FaultBytesSent() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faultBytes
}

// NewServer starts a server answering turns on a loopback port; it closes
// when the test ends.
func NewServer(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	s := newServer(turns)
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Listen starts a server answering turns on addr (e.g. "127.0.0.1:0").
// Lines describing each request go to log when it is not nil.
func Listen(addr string, turns []Turn, log io.Writer) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := newServer(turns)
	s.log = log
	s.srv = httptest.NewUnstartedServer(s)
	_ = s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL
	return s, nil
}

func newServer(turns []Turn) *Server {
	return &Server{turns: append([]Turn(nil), turns...), used: make([]bool, len(turns))}
}

// OpenAIURL is the base URL an OpenAI client uses (URL + "/v1").
func (s *Server) OpenAIURL() string { return s.URL + "/v1" }

// Close stops the server; streams in flight are cut.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetModels sets the model names GET .../models lists (none by default).
// Listing models uses no scripted turn.
func (s *Server) SetModels(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string(nil), names...)
}

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
	s.used = append(s.used, make([]bool, len(turns))...)
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Remaining is the number of scripted turns not yet used.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i, u := range s.used {
		if !u && !s.turns[i].Default {
			n++
		}
	}
	return n
}

// LoadScript reads turns from a JSON file: an array of turns, or an object
// with a "turns" array.
func LoadScript(path string) ([]Turn, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseScript(b)
}

// ParseScript reads turns from JSON (see LoadScript).
func ParseScript(b []byte) ([]Turn, error) {
	var turns []Turn
	if err := json.Unmarshal(b, &turns); err == nil {
		return turns, nil
	}
	var obj struct {
		Turns []Turn `json:"turns"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("script: want a JSON array of turns or {\"turns\": [...]}: %w", err)
	}
	return obj.Turns, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var format string
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		s.listModels(w, r)
		return
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		format = "openai"
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages"):
		format = "anthropic"
	default:
		http.Error(w, "fake model: POST .../chat/completions (OpenAI) or .../messages (Anthropic)", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "fake model: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var head struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		writeError(w, format, http.StatusBadRequest, "invalid_request_error", "fake model: body is not JSON: "+err.Error(), "")
		return
	}
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case format == "anthropic":
		key = r.Header.Get("X-Api-Key")
	case key == "":
		key = r.Header.Get("Api-Key")
	}

	s.mu.Lock()
	idx, turn := s.pick(format, body)
	req := Request{Format: format, Path: r.URL.Path, Query: r.URL.RawQuery, Stream: head.Stream, Model: head.Model, APIKey: key,
		Header: r.Header.Clone(), Body: body, Turn: idx, Time: time.Now()}
	s.reqs = append(s.reqs, req)
	n := len(s.reqs)
	log := s.log
	s.mu.Unlock()

	if log != nil {
		fmt.Fprintf(log, "#%d %s %s model=%q stream=%v -> %s\n", n, format, r.URL.Path, head.Model, head.Stream, describe(idx, turn))
	}
	if idx < 0 {
		w.Header().Set("x-should-retry", "false")
		writeError(w, format, http.StatusInternalServerError, "api_error",
			fmt.Sprintf("fake model: the script has no turn left for request %d", n), "")
		return
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		msg := turn.Error
		if msg == "" {
			msg = http.StatusText(turn.Status)
		}
		writeError(w, format, turn.Status, turn.ErrorType, msg, turn.RetryAfter)
		return
	}
	usage := turn.usage(len(body))
	a := answer{turn: turn, model: head.Model, n: n, usage: usage}
	if turn.Fault != "" {
		sent := a.fault(w, r, format)
		s.mu.Lock()
		s.faultBytes += sent
		s.mu.Unlock()
		return
	}
	switch {
	case format == "openai" && head.Stream:
		a.openAIStream(w, r, wantsUsage(body))
	case format == "openai":
		a.openAIJSON(w)
	case head.Stream:
		a.anthropicStream(w, r)
	default:
		a.anthropicJSON(w)
	}
}

// listModels answers GET .../models in the format of the client: Anthropic's
// SDK sends an anthropic-version header, OpenAI's does not.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	names := append([]string(nil), s.models...)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	var body any
	if r.Header.Get("anthropic-version") != "" {
		data := []map[string]any{}
		for _, n := range names {
			data = append(data, map[string]any{"id": n, "type": "model", "display_name": n, "created_at": "2025-01-01T00:00:00Z"})
		}
		page := map[string]any{"data": data, "has_more": false}
		if len(names) > 0 {
			page["first_id"], page["last_id"] = names[0], names[len(names)-1]
		}
		body = page
	} else {
		data := []map[string]any{}
		for _, n := range names {
			data = append(data, map[string]any{"id": n, "object": "model", "created": 0, "owned_by": "fakemodel"})
		}
		body = map[string]any{"object": "list", "data": data}
	}
	_ = json.NewEncoder(w).Encode(body)
}

func describe(idx int, t Turn) string {
	if idx < 0 {
		return "no turn left (500)"
	}
	if t.Status != 0 && t.Status != http.StatusOK {
		return fmt.Sprintf("turn %d: error %d", idx+1, t.Status)
	}
	parts := []string{}
	if t.Fault != "" {
		parts = append(parts, "fault "+t.Fault)
	}
	if t.Text != "" {
		parts = append(parts, fmt.Sprintf("%d chars of text", len(t.Text)))
	}
	for _, c := range t.ToolCalls {
		parts = append(parts, "call "+c.Name)
	}
	return fmt.Sprintf("turn %d: %s", idx+1, strings.Join(parts, ", "))
}

func wantsUsage(body []byte) bool {
	var v struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(body, &v)
	return v.StreamOptions.IncludeUsage
}

func (t Turn) usage(bodyLen int) Usage {
	if t.Usage != nil {
		return *t.Usage
	}
	out := len(t.Text)
	for _, c := range t.ToolCalls {
		out += len(c.Name) + len(c.Args)
	}
	return Usage{Input: int64(bodyLen/4 + 1), Output: int64(out/4 + 1)}
}

// errorTypes are Anthropic's error types by status.
var errorTypes = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
	404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
	500: "api_error", 529: "overloaded_error",
}

func writeError(w http.ResponseWriter, format string, status int, typ, msg, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if format == "anthropic" {
		if typ == "" {
			typ = errorTypes[status]
			if typ == "" {
				typ = "api_error"
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
		return
	}
	var code any
	if typ != "" {
		code = typ
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": openAIErrorType(status), "param": nil, "code": code}})
}

func openAIErrorType(status int) string {
	switch status {
	case 401:
		return "invalid_authentication"
	case 404:
		return "invalid_request_error"
	case 429:
		return "rate_limit_exceeded"
	}
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

// answer writes one successful turn in one of the four shapes.
type answer struct {
	turn  Turn
	model string
	n     int
	usage Usage
}

func (a answer) callID(format string, i int) string {
	if c := a.turn.ToolCalls[i]; c.ID != "" {
		return c.ID
	}
	if format == "anthropic" {
		return fmt.Sprintf("toolu_%d_%d", a.n, i+1)
	}
	return fmt.Sprintf("call_%d_%d", a.n, i+1)
}

func args(c ToolCall) string {
	if c.Args == "" {
		return "{}"
	}
	return c.Args
}

// words splits text into stream pieces that keep their spaces.
func words(text string) []string {
	if text == "" {
		return nil
	}
	return strings.SplitAfter(text, " ")
}

// pieces splits s into at most three parts, so arguments arrive in bits.
func pieces(s string) []string {
	if len(s) < 3 {
		return []string{s}
	}
	a, b := len(s)/3, 2*len(s)/3
	return []string{s[:a], s[a:b], s[b:]}
}

// streamer writes SSE events, flushing each, and applies the turn's delay
// and hold between them.
type streamer struct {
	w     http.ResponseWriter
	r     *http.Request
	turn  Turn
	count int
	// held is set once the first piece of text or the first tool call is
	// out: a Hold pauses the stream there.
	held bool
}

// sendPiece sends an event that carries a piece of the answer.
func (s *streamer) sendPiece(event string, v any) bool {
	ok := s.send(event, v)
	s.held = true
	return ok
}

func newStreamer(w http.ResponseWriter, r *http.Request, t Turn) *streamer {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &streamer{w: w, r: r, turn: t}
}

func (s *streamer) send(event string, v any) bool {
	if s.count > 0 && s.turn.ChunkDelay > 0 {
		select {
		case <-time.After(time.Duration(s.turn.ChunkDelay)):
		case <-s.r.Context().Done():
			return false
		}
	}
	if s.held && s.turn.Hold != nil {
		select {
		case <-s.turn.Hold:
		case <-s.r.Context().Done():
			return false
		}
		s.turn.Hold = nil
	}
	s.count++
	data := "[DONE]"
	if v != nil {
		b, _ := json.Marshal(v)
		data = string(b)
	}
	if event != "" {
		fmt.Fprintf(s.w, "event: %s\n", event)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return s.r.Context().Err() == nil
}

func (a answer) finish(format string) string {
	if a.turn.StopReason != "" {
		return a.turn.StopReason
	}
	if format == "anthropic" {
		if len(a.turn.ToolCalls) > 0 {
			return "tool_use"
		}
		return "end_turn"
	}
	if len(a.turn.ToolCalls) > 0 && a.turn.Dialect != "ollama" {
		return "tool_calls"
	}
	return "stop"
}

func (a answer) openAIUsage() map[string]any {
	u := a.usage
	return map[string]any{
		"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
	}
}

func (a answer) openAIJSON(w http.ResponseWriter) {
	msg := map[string]any{"role": "assistant", "content": nil}
	if a.turn.Text != "" {
		msg["content"] = a.turn.Text
	}
	if len(a.turn.ToolCalls) > 0 {
		var calls []map[string]any
		for i, c := range a.turn.ToolCalls {
			call := map[string]any{"type": "function", "function": map[string]any{"name": c.Name, "arguments": args(c)}}
			if a.turn.Dialect != "ollama" {
				call["id"] = a.callID("openai", i)
			}
			calls = append(calls, call)
		}
		msg["tool_calls"] = calls
	}
	out := map[string]any{
		"id": fmt.Sprintf("chatcmpl-fake-%d", a.n), "object": "chat.completion", "created": time.Now().Unix(),
		"model": a.model, "choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": a.finish("openai")}},
		"usage": a.openAIUsage(),
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (a answer) openAIStream(w http.ResponseWriter, r *http.Request, includeUsage bool) {
	s := newStreamer(w, r, a.turn)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": fmt.Sprintf("chatcmpl-fake-%d", a.n), "object": "chat.completion.chunk", "created": time.Now().Unix(),
			"model": a.model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	if !s.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, w := range words(a.turn.Text) {
		if !s.sendPiece("", chunk(map[string]any{"content": w}, nil)) {
			return
		}
	}
	switch a.turn.Dialect {
	case "ollama":
		if len(a.turn.ToolCalls) > 0 {
			var calls []any
			for _, c := range a.turn.ToolCalls {
				calls = append(calls, map[string]any{"type": "function", "function": map[string]any{"name": c.Name, "arguments": args(c)}})
			}
			if !s.send("", chunk(map[string]any{"tool_calls": calls}, nil)) {
				return
			}
		}
	case "llamacpp":
		for i, c := range a.turn.ToolCalls {
			first := map[string]any{"id": a.callID("openai", i), "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}
			if !s.send("", chunk(map[string]any{"tool_calls": []any{first}}, nil)) {
				return
			}
			for _, p := range pieces(args(c)) {
				if !s.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"function": map[string]any{"arguments": p}}}}, nil)) {
					return
				}
			}
		}
	default:
		for i, c := range a.turn.ToolCalls {
			first := map[string]any{"index": i, "id": a.callID("openai", i), "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}
			if !s.send("", chunk(map[string]any{"tool_calls": []any{first}}, nil)) {
				return
			}
			for _, p := range pieces(args(c)) {
				if !s.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil)) {
					return
				}
			}
		}
	}
	if !s.send("", chunk(map[string]any{}, a.finish("openai"))) {
		return
	}
	if includeUsage && a.turn.Dialect == "" {
		u := map[string]any{
			"id": fmt.Sprintf("chatcmpl-fake-%d", a.n), "object": "chat.completion.chunk", "created": time.Now().Unix(),
			"model": a.model, "choices": []any{}, "usage": a.openAIUsage(),
		}
		if !s.send("", u) {
			return
		}
	}
	s.send("", nil)
}

func (a answer) anthropicContent() []any {
	var content []any
	if a.turn.Thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": a.turn.Thinking, "signature": a.signature()})
	}
	if a.turn.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": a.turn.Text})
	}
	for i, c := range a.turn.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": a.callID("anthropic", i), "name": c.Name, "input": json.RawMessage(args(c))})
	}
	if content == nil {
		content = []any{}
	}
	return content
}

// signature is a thinking block's made-up signature.
func (a answer) signature() string { return fmt.Sprintf("sig-fake-%d", a.n) }

func (a answer) anthropicUsage(output int64) map[string]any {
	return map[string]any{
		"input_tokens": a.usage.Input, "output_tokens": output,
		"cache_creation_input_tokens": a.usage.CacheWrite, "cache_read_input_tokens": a.usage.CacheRead,
	}
}

func (a answer) anthropicJSON(w http.ResponseWriter) {
	out := map[string]any{
		"id": fmt.Sprintf("msg_fake_%d", a.n), "type": "message", "role": "assistant", "model": a.model,
		"content": a.anthropicContent(), "stop_reason": a.finish("anthropic"), "stop_sequence": nil,
		"usage": a.anthropicUsage(a.usage.Output),
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (a answer) anthropicStream(w http.ResponseWriter, r *http.Request) {
	s := newStreamer(w, r, a.turn)
	start := map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake_%d", a.n), "type": "message", "role": "assistant", "model": a.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": a.anthropicUsage(1),
	}}
	if !s.send("message_start", start) {
		return
	}
	idx := 0
	if a.turn.Thinking != "" {
		if !s.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}) {
			return
		}
		for _, w := range words(a.turn.Thinking) {
			if !s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "thinking_delta", "thinking": w}}) {
				return
			}
		}
		if !s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "signature_delta", "signature": a.signature()}}) ||
			!s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
			return
		}
		idx++
	}
	if a.turn.Text != "" {
		if !s.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}}) {
			return
		}
		for _, w := range words(a.turn.Text) {
			if !s.sendPiece("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": w}}) {
				return
			}
		}
		if !s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
			return
		}
		idx++
	}
	for i, c := range a.turn.ToolCalls {
		block := map[string]any{"type": "tool_use", "id": a.callID("anthropic", i), "name": c.Name, "input": map[string]any{}}
		if !s.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": block}) {
			return
		}
		for _, p := range pieces(args(c)) {
			if !s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}}) {
				return
			}
		}
		if !s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
			return
		}
		idx++
	}
	if !s.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": a.finish("anthropic"), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": a.usage.Output}}) {
		return
	}
	s.send("message_stop", map[string]any{"type": "message_stop"})
}
