package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weavehq/weave/bus"

	"github.com/weavehq/weave/internal/fastjson"
)

// Error codes. The first five are JSON-RPC 2.0's; the rest are the bus's.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603

	// CodeNotInitialized answers any method but initialize and ping before
	// the handshake, with the message "Not initialized", as bub's server
	// does.
	CodeNotInitialized = -32001
	// CodeInvalidClientInfo answers an initialize whose clientInfo is
	// present but not an object, or whose clientId is unusable.
	CodeInvalidClientInfo    = -32002
	CodeSubscriptionNotFound = -32004
	// CodeForbidden answers a peer without the bus token that subscribes
	// to or sends on a protected topic (bus.ProtectedPrefixes).
	CodeForbidden = -32003
	// CodeLimit is returned when a connection reaches
	// Options.MaxSubscriptions.
	CodeLimit = -32006
)

// Error is a JSON-RPC error object. Client calls return it as their error
// when the server answers with one.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if e.Data != nil {
		return fmt.Sprintf("jsonrpc error %d: %s (%v)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

var nullID = json.RawMessage("null")

// request is an outgoing request or notification.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  any             `json:"params,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
}

// response is an outgoing response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
}

func errorResponse(id json.RawMessage, e *Error) *response {
	if id == nil {
		id = nullID
	}
	return &response{JSONRPC: "2.0", Error: e, ID: id}
}

func resultResponse(id json.RawMessage, result any) *response {
	return &response{JSONRPC: "2.0", Result: result, ID: id}
}

// incoming is one parsed element of a frame.
type incoming struct {
	id       json.RawMessage // nil when absent
	method   string
	params   json.RawMessage
	response bool // a response to one of our calls
	result   json.RawMessage
	err      *Error
	invalid  *Error // set when the element is not a valid request or response
}

func (in incoming) notification() bool { return in.method != "" && in.id == nil }

// envelope is the shape of every JSON-RPC object; RawMessage fields are
// nil when absent and "null" when null.
type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// plainString returns the value of a JSON string without escapes (every
// method name in practice) without a decoder pass.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' || c == '"' || c < 0x20 || c >= 0x80 {
			return "", false
		}
	}
	return string(body), true
}

// parseIncoming classifies one JSON value. The second result is false when
// raw is not valid JSON at all (a parse error).
func parseIncoming(raw []byte) (incoming, bool) {
	var env envelope
	if err := fastjson.Unmarshal(raw, &env); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || len(bytes.TrimSpace(raw)) == 0 {
			return incoming{}, false
		}
		return incoming{invalid: errorf(CodeInvalidRequest, "invalid request: each message must be a JSON object")}, true
	}
	if firstByte(raw) != '{' {
		return incoming{invalid: errorf(CodeInvalidRequest, "invalid request: each message must be a JSON object")}, true
	}
	var in incoming
	if env.ID != nil {
		if !validID(env.ID) {
			return incoming{invalid: errorf(CodeInvalidRequest, "invalid request: id must be a string, a number or null")}, true
		}
		in.id = env.ID
	}
	if !bytes.Equal(bytes.TrimSpace(env.JSONRPC), []byte(`"2.0"`)) {
		in.invalid = errorf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
		return in, true
	}
	if env.Method != nil {
		if m, ok := plainString(env.Method); ok {
			in.method = m
		} else if err := json.Unmarshal(env.Method, &in.method); err != nil {
			in.method = ""
		}
		if in.method == "" {
			in.invalid = errorf(CodeInvalidRequest, "invalid request: method must be a non-empty string")
			return in, true
		}
		in.params = env.Params
		if len(in.params) > 0 {
			switch firstByte(in.params) {
			case '{', '[':
			case 'n': // null params count as none
				in.params = nil
			default:
				in.invalid = errorf(CodeInvalidRequest, "invalid request: params must be an object or an array")
			}
		}
		return in, true
	}
	hasResult, hasError := env.Result != nil, env.Error != nil
	if in.id == nil || hasResult == hasError {
		in.invalid = errorf(CodeInvalidRequest, "invalid request: a request needs a method; a response needs an id and one of result or error")
		return in, true
	}
	in.response = true
	in.result = env.Result
	if hasError {
		in.err = &Error{}
		if err := json.Unmarshal(env.Error, in.err); err != nil {
			in.err = &Error{Code: CodeInternal, Message: "peer sent a malformed error object"}
		}
	}
	return in, true
}

func validID(id json.RawMessage) bool {
	switch firstByte(id) {
	case '"', 'n':
		return true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// ClientInfo names a client program in initialize.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ServerInfo names the server in the initialize result.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type initializeParams struct {
	ClientID string `json:"clientId"`
	// ClientInfo is optional: bub's client sends null.
	ClientInfo json.RawMessage `json:"clientInfo"`
}

// InitializeResult is the server's answer to initialize.
type InitializeResult struct {
	ServerID     string       `json:"serverId"`
	ServerInfo   ServerInfo   `json:"serverInfo"`
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities is what the server offers.
type Capabilities struct {
	Subscribe      bool `json:"subscribe"`
	Publish        bool `json:"publish"`
	ProcessMessage bool `json:"processMessage"`
	// Topics is always sent, [] when there is nothing to advertise: bub's
	// client rejects a result without it.
	Topics []string `json:"topics"`
}

type subscribeParams struct {
	Topic  *string `json:"topic"`
	Policy string  `json:"policy,omitempty"`
	// Method is how the server delivers: "sendMessage" (the default) or
	// "processMessage".
	Method string `json:"method,omitempty"`
}

type sendParams struct {
	Topic          *string           `json:"topic"`
	Payload        json.RawMessage   `json:"payload"`
	Headers        map[string]string `json:"headers,omitempty"`
	IdempotencyKey string            `json:"idempotencyKey,omitempty"`
}

// Delivery is the params of a server-to-subscriber sendMessage or
// processMessage call.
type Delivery struct {
	Topic        string            `json:"topic"`
	Payload      json.RawMessage   `json:"payload"`
	MessageID    string            `json:"messageId,omitempty"`
	Attempt      int               `json:"attempt,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Subscription string            `json:"subscription,omitempty"`
}

// AckResult is a subscriber's answer to a delivery: the processMessage
// result of the protocol, which also reads a bare sendMessage result
// ({"success": true}).
type AckResult struct {
	Processed       *bool   `json:"processed,omitempty"`
	Success         *bool   `json:"success,omitempty"`
	StopPropagation bool    `json:"stopPropagation,omitempty"`
	ShouldRetry     bool    `json:"should_retry,omitempty"`
	RetrySeconds    float64 `json:"retry_seconds,omitempty"`
	Message         string  `json:"message,omitempty"`
	// Result is what the subscriber answers beyond the ack: a hook's
	// decision, an agent's output.
	Result json.RawMessage `json:"result,omitempty"`
}

func (r AckResult) ack(name string) bus.Ack {
	processed := false
	switch {
	case r.Processed != nil:
		processed = *r.Processed
	case r.Success != nil:
		processed = *r.Success
	}
	return bus.Ack{
		Subscriber:      name,
		Processed:       processed,
		StopPropagation: r.StopPropagation,
		ShouldRetry:     r.ShouldRetry,
		RetrySeconds:    r.RetrySeconds,
		Message:         r.Message,
		Result:          r.Result,
	}
}

func ackResultOf(a bus.Ack) AckResult {
	p := a.Processed
	return AckResult{Processed: &p, Success: &p, StopPropagation: a.StopPropagation, ShouldRetry: a.ShouldRetry, RetrySeconds: a.RetrySeconds, Message: a.Message, Result: a.Result}
}

// AckInfo is one subscriber's ack in a sendMessage result.
type AckInfo struct {
	ClientID        string  `json:"client_id"`
	Processed       bool    `json:"processed"`
	StopPropagation bool    `json:"stopPropagation,omitempty"`
	ShouldRetry     bool    `json:"should_retry,omitempty"`
	RetrySeconds    float64 `json:"retry_seconds,omitempty"`
	Message         string  `json:"message,omitempty"`
	Error           string  `json:"error,omitempty"`
	// Result is the subscriber's answer (see AckResult.Result).
	Result json.RawMessage `json:"result,omitempty"`
}

// SendResult is the result of sendMessage.
type SendResult struct {
	// Success is true when at least one subscriber got the message.
	Success bool      `json:"success"`
	Acks    []AckInfo `json:"acks"`
	// StopPropagation is true when a subscriber asked for it in its ack;
	// whether the walk stopped for another reason (a processed ack under
	// stopPropagationOnProcessed) is not reported here.
	StopPropagation bool   `json:"stopPropagation"`
	MessageID       string `json:"messageId"`
	Delivered       int    `json:"delivered"`
	DeadLettered    bool   `json:"deadLettered,omitempty"`
	Duplicate       bool   `json:"duplicate,omitempty"`
	Offset          uint64 `json:"offset,omitempty"`
}

func sendResultOf(r bus.Result) SendResult {
	out := SendResult{
		Success:      r.Delivered > 0,
		Acks:         make([]AckInfo, 0, len(r.Acks)),
		MessageID:    r.MessageID,
		Delivered:    r.Delivered,
		DeadLettered: r.DeadLettered,
		Duplicate:    r.Duplicate,
		Offset:       r.Offset,
	}
	for _, a := range r.Acks {
		out.StopPropagation = out.StopPropagation || a.StopPropagation
		out.Acks = append(out.Acks, AckInfo{
			ClientID:        a.Subscriber,
			Processed:       a.Processed,
			StopPropagation: a.StopPropagation,
			ShouldRetry:     a.ShouldRetry,
			RetrySeconds:    a.RetrySeconds,
			Message:         a.Message,
			Error:           a.Error,
			Result:          a.Result,
		})
	}
	return out
}

type pingResult struct {
	Timestamp string `json:"timestamp"`
}
