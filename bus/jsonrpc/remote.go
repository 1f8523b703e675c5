package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/guard"
)

// ErrRemoteUnsupported is wrapped by the errors of Remote calls that the
// JSON-RPC protocol has no method for and whose server offers no admin
// routes (see AdminHandler).
var ErrRemoteUnsupported = errors.New("not available over a remote bus")

// Remote is a bus.Bus whose bus runs elsewhere: a Weave bus reached over
// its JSON-RPC WebSocket face through a Client. It lets code written against
// bus.Bus (the host's hooks, delegation and loop events) join a standalone
// bus unchanged.
//
// What maps onto the protocol:
//   - Request is sendMessage: the server walks its subscribers and the acks
//     come back. The protocol's acks carry processed, stopPropagation,
//     should_retry, retry_seconds, message and error; an ack's Result is
//     filled only when the server sends a "result" object.
//   - Publish is sendMessage too (the protocol has no fire-and-forget
//     publish): it waits for the server's walk, and the acks are returned.
//   - Subscribe is subscribe with the handler answering the deliveries.
//     Name, QueueSize and Timeout are not sent: the server names the
//     subscription after the client and applies its own timeout. One
//     connection holds one subscription per pattern.
//
// Retained, Replay, DeadLetters and ReplayDeadLetter have no JSON-RPC
// method. They use the HTTP admin routes of AdminHandler on the same host
// and port when the server offers them (`weave bus serve` does); otherwise
// they fail with ErrRemoteUnsupported.
type Remote struct {
	c     *Client
	admin string // http(s)://host:port of the admin routes
	token string
	http  *http.Client

	mu   sync.Mutex
	subs map[string]bool // patterns subscribed through this Remote
}

// DialRemote dials the bus at rawURL (ws:// or wss://) and returns it as a
// bus.Bus. Close closes the client.
func DialRemote(ctx context.Context, rawURL string, info ClientInfo, opts ...DialOption) (*Remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, fmt.Errorf("bus URL %q is not a ws:// or wss:// URL (e.g. ws://127.0.0.1:7892)", rawURL)
	}
	c, err := Dial(ctx, rawURL, info, opts...)
	if err != nil {
		return nil, err
	}
	return NewRemote(c), nil
}

// NewRemote wraps a connected client. Close closes it.
func NewRemote(c *Client) *Remote {
	r := &Remote{c: c, token: c.token, http: &http.Client{Timeout: 30 * time.Second}, subs: map[string]bool{}}
	if u, err := url.Parse(c.url); err == nil {
		scheme := "http"
		if u.Scheme == "wss" {
			scheme = "https"
		}
		r.admin = scheme + "://" + u.Host
	}
	return r
}

// Client returns the underlying client.
func (r *Remote) Client() *Client { return r.c }

// Publish sends m with sendMessage; see Remote.
func (r *Remote) Publish(ctx context.Context, m bus.Message) (bus.Result, error) {
	return r.Request(ctx, m)
}

// Request sends m with sendMessage and maps the answer back to a
// bus.Result.
func (r *Remote) Request(ctx context.Context, m bus.Message) (bus.Result, error) {
	if err := bus.ValidateTopic(m.Topic); err != nil {
		return bus.Result{}, err
	}
	var res remoteSendResult
	p := sendParams{Topic: &m.Topic, Payload: m.Payload, Headers: m.Headers, IdempotencyKey: m.IdempotencyKey}
	if err := r.c.Call(ctx, "sendMessage", p, &res); err != nil {
		return bus.Result{}, fmt.Errorf("send to %s: %w", m.Topic, err)
	}
	return res.result(), nil
}

// remoteSendResult is SendResult with each ack's optional result object.
type remoteSendResult struct {
	SendResult
	Acks []struct {
		AckInfo
		Result json.RawMessage `json:"result,omitempty"`
	} `json:"acks"`
}

func (s remoteSendResult) result() bus.Result {
	out := bus.Result{
		Delivered: s.Delivered,
		// The wire reports what subscribers asked for, not why the walk
		// ended: Stopped means a subscriber asked to stop.
		Stopped:      s.StopPropagation,
		DeadLettered: s.DeadLettered,
		Duplicate:    s.Duplicate,
		Offset:       s.Offset,
		MessageID:    s.MessageID,
	}
	for _, a := range s.Acks {
		out.Acks = append(out.Acks, bus.Ack{
			Subscriber:      a.ClientID,
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

// Subscribe subscribes to pattern on the remote bus; see Remote.
func (r *Remote) Subscribe(ctx context.Context, pattern string, h bus.Handler, opts bus.SubscribeOptions) (bus.Subscription, error) {
	if err := bus.ValidatePattern(pattern); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.subs[pattern] {
		r.mu.Unlock()
		return nil, fmt.Errorf("subscribe to %q: this remote bus connection is already subscribed to it; unsubscribe first or dial a second connection", pattern)
	}
	r.subs[pattern] = true
	r.mu.Unlock()
	if err := r.c.Subscribe(ctx, pattern, h, SubscribeOptions{Policy: opts.Policy}); err != nil {
		r.mu.Lock()
		delete(r.subs, pattern)
		r.mu.Unlock()
		return nil, err
	}
	return &remoteSub{r: r, pattern: pattern}, nil
}

type remoteSub struct {
	r       *Remote
	pattern string
	once    sync.Once
	err     error
}

func (s *remoteSub) Unsubscribe() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.err = s.r.c.Unsubscribe(ctx, s.pattern)
		s.r.mu.Lock()
		delete(s.r.subs, s.pattern)
		s.r.mu.Unlock()
	})
	return s.err
}

func (s *remoteSub) Pattern() string { return s.pattern }
func (s *remoteSub) Name() string    { return s.r.c.ID() }

// Retained reads the last message of a retained topic through the admin
// routes.
func (r *Remote) Retained(ctx context.Context, topic string) (bus.Message, bool, error) {
	var out struct {
		Found   bool        `json:"found"`
		Message bus.Message `json:"message"`
	}
	if err := r.adminCall(ctx, http.MethodGet, AdminRetainedPath+"?topic="+url.QueryEscape(topic), &out); err != nil {
		return bus.Message{}, false, fmt.Errorf("read retained topic %s: %w", topic, err)
	}
	return out.Message, out.Found, nil
}

// Replay reads an append-only topic through the admin routes.
func (r *Remote) Replay(ctx context.Context, topic string, from uint64, fn func(offset uint64, m bus.Message) bool) error {
	var out []struct {
		Offset  uint64      `json:"offset"`
		Message bus.Message `json:"message"`
	}
	path := fmt.Sprintf("%s?topic=%s&from=%d", AdminReplayPath, url.QueryEscape(topic), from)
	if err := r.adminCall(ctx, http.MethodGet, path, &out); err != nil {
		return fmt.Errorf("replay topic %s: %w", topic, err)
	}
	for _, e := range out {
		if !fn(e.Offset, e.Message) {
			return nil
		}
	}
	return nil
}

// DeadLetters lists the remote bus's dead letters through the admin routes.
func (r *Remote) DeadLetters(ctx context.Context) ([]bus.DeadLetter, error) {
	var out []bus.DeadLetter
	if err := r.adminCall(ctx, http.MethodGet, AdminDeadLettersPath, &out); err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}

// ReplayDeadLetter re-sends a dead letter through the admin routes.
func (r *Remote) ReplayDeadLetter(ctx context.Context, id string) (bus.Result, error) {
	var out bus.Result
	if err := r.adminCall(ctx, http.MethodPost, AdminDeadLettersPath+"/"+url.PathEscape(id)+"/replay", &out); err != nil {
		return bus.Result{}, fmt.Errorf("replay dead letter %s: %w", id, err)
	}
	return out, nil
}

// Close closes the client; the remote bus goes on.
func (r *Remote) Close() error { return r.c.Close() }

func (r *Remote) adminCall(ctx context.Context, method, path string, out any) error {
	if r.admin == "" {
		return ErrRemoteUnsupported
	}
	req, err := http.NewRequestWithContext(ctx, method, r.admin+path, nil)
	if err != nil {
		return err
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRemoteUnsupported, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.Header.Get(adminHeader) == "":
		return fmt.Errorf("%w: the server at %s has no admin routes (run the bus with `weave bus serve`, or use a nats:// bus)", ErrRemoteUnsupported, r.admin)
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("unauthorized at %s: pass the bus token (bus.token or WEAVE_BUS_TOKEN)", r.admin)
	case resp.StatusCode != http.StatusOK:
		var e struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%s: %w", e.Error, bus.ErrNotFound)
		}
		return errors.New(e.Error)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode answer from %s: %w", r.admin, err)
	}
	return nil
}

// Admin routes served by AdminHandler.
const (
	AdminRetainedPath    = "/bus/retained"
	AdminReplayPath      = "/bus/replay"
	AdminDeadLettersPath = "/bus/dead-letters"
	// adminHeader marks answers of the admin routes, so that a 404 from
	// them (an unknown dead letter) is told from a server without them.
	adminHeader = "X-Weave-Bus-Admin"
	maxReplay   = 10000
)

// AdminHandler serves the parts of a bus the JSON-RPC protocol has no
// method for, as JSON over HTTP, for Remote and `weave bus dlq`:
//
//	GET  /bus/retained?topic=T       {"found": bool, "message": Message}
//	GET  /bus/replay?topic=T&from=N  [{"offset": N, "message": Message}] (at most 10000)
//	GET  /bus/dead-letters           [DeadLetter]
//	POST /bus/dead-letters/{id}/replay  Result
//
// With a token, requests must carry it as a bearer token. Mount it beside
// the WebSocket server under "/bus/".
func AdminHandler(b bus.Bus, token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+AdminRetainedPath, func(w http.ResponseWriter, r *http.Request) {
		m, ok, err := b.Retained(r.Context(), r.URL.Query().Get("topic"))
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		adminJSON(w, map[string]any{"found": ok, "message": m})
	})
	mux.HandleFunc("GET "+AdminReplayPath, func(w http.ResponseWriter, r *http.Request) {
		var from uint64
		if s := r.URL.Query().Get("from"); s != "" {
			if _, err := fmt.Sscan(s, &from); err != nil {
				adminError(w, http.StatusBadRequest, fmt.Errorf("from %q is not an offset", s))
				return
			}
		}
		type entry struct {
			Offset  uint64      `json:"offset"`
			Message bus.Message `json:"message"`
		}
		out := []entry{}
		err := b.Replay(r.Context(), r.URL.Query().Get("topic"), from, func(off uint64, m bus.Message) bool {
			out = append(out, entry{off, m})
			return len(out) < maxReplay
		})
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		adminJSON(w, out)
	})
	mux.HandleFunc("GET "+AdminDeadLettersPath, func(w http.ResponseWriter, r *http.Request) {
		dls, err := b.DeadLetters(r.Context())
		if err != nil {
			adminError(w, http.StatusInternalServerError, err)
			return
		}
		if dls == nil {
			dls = []bus.DeadLetter{}
		}
		adminJSON(w, dls)
	})
	mux.HandleFunc("POST "+AdminDeadLettersPath+"/{id}/replay", func(w http.ResponseWriter, r *http.Request) {
		res, err := b.ReplayDeadLetter(r.Context(), r.PathValue("id"))
		switch {
		case errors.Is(err, bus.ErrNotFound):
			adminError(w, http.StatusNotFound, fmt.Errorf("no dead letter %q: list them with `weave bus dlq`", r.PathValue("id")))
			return
		case err != nil:
			adminError(w, http.StatusInternalServerError, err)
			return
		}
		adminJSON(w, res)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(adminHeader, "1")
		if !guard.Authorized(r, token) {
			guard.Challenge(w)
			adminError(w, http.StatusUnauthorized, errors.New(guard.Refusal))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func adminJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func adminError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

var _ bus.Bus = (*Remote)(nil)
