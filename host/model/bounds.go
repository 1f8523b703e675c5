package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// An answer is bounded three ways, all checked while it arrives, so that an
// endpoint that streams without end costs a bounded amount of memory and
// fails with a message instead:
//
//   - MaxAnswerBytes: the text, tool-call arguments and thinking of one
//     answer together;
//   - the answer's max_tokens (the request's, else model.max_tokens, else
//     the provider's default): a streamed answer is cut when it holds more
//     pieces than that many tokens can make, or more bytes than they can
//     spell (maxBytesPerToken);
//   - MaxResponseBytes: every byte of one HTTP response, SSE framing and
//     events the host does not read included, streamed or not.
//
// Both providers' streams pass the same two places: the answer's pieces go
// through bounded.Complete's meter (the providers report every piece as a
// Delta), and every response body through the client's meteredTransport.
const (
	// MaxAnswerBytes bounds the content of one answer. A 128k-token
	// answer is about 512 KB; the cap is well above any real one and well
	// below what a session transcript line can hold.
	MaxAnswerBytes = 4 << 20
	// MaxResponseBytes bounds one HTTP response from the model endpoint:
	// a 128k-token answer streamed a token an event is about 25 MB of SSE.
	MaxResponseBytes = 64 << 20
	// maxBytesPerToken is more than any tokenizer's tokens average over
	// an answer (about 4 bytes in prose and code).
	maxBytesPerToken = 16
)

// ErrAnswerTooLong is wrapped by the error of an answer that crossed one of
// its bounds. It is not retried: the same endpoint would do it again.
var ErrAnswerTooLong = errors.New("the model's answer is longer than its bounds")

// ErrStreamCut is wrapped by the error of an answer whose stream ended
// before its finish event (OpenAI: a choice with a finish_reason;
// Anthropic: message_stop), or could not be read: the connection closed
// mid-answer, or the endpoint sent something that is not the stream. Such a
// call is retried like a 5xx; the answer so far is never taken as whole.
var ErrStreamCut = errors.New("the model's stream ended before its finish event")

// meter counts one answer's pieces against its bounds.
type meter struct {
	maxTokens int
	pieces    int
	bytes     int
}

// add counts a piece of n bytes and says which bound it crossed, if any.
func (m *meter) add(n int) error {
	if n == 0 {
		return nil
	}
	m.pieces++
	m.bytes += n
	if m.bytes > MaxAnswerBytes {
		return fmt.Errorf("%w: more than %d bytes (the host's cap on one answer)", ErrAnswerTooLong, MaxAnswerBytes)
	}
	if m.maxTokens <= 0 {
		return nil
	}
	// Each streamed piece holds at least one token; a little room is left
	// for servers that send a token's bytes in two pieces.
	if limit := m.maxTokens + m.maxTokens/10 + 16; m.pieces > limit {
		return fmt.Errorf("%w: more than %d pieces for max_tokens %d (set by the request or model.max_tokens)", ErrAnswerTooLong, limit, m.maxTokens)
	}
	if limit := m.maxTokens * maxBytesPerToken; m.bytes > limit {
		return fmt.Errorf("%w: more than %d bytes for max_tokens %d (set by the request or model.max_tokens)", ErrAnswerTooLong, limit, m.maxTokens)
	}
	return nil
}

// callState is what the transport learns of one Complete: whether an
// answer's body (a 2xx response) was being read, and how much of it.
type callState struct {
	started atomic.Bool
	read    atomic.Int64
}

type callStateKey struct{}

func withCallState(ctx context.Context, st *callState) context.Context {
	return context.WithValue(ctx, callStateKey{}, st)
}

// meteredTransport bounds every response body to MaxResponseBytes and
// tells the call it serves that an answer's body was handed out.
type meteredTransport struct {
	next http.RoundTripper
}

// meteredClient is c with its transport wrapped in meteredTransport.
func meteredClient(c *http.Client) *http.Client {
	cp := *c
	next := cp.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp.Transport = meteredTransport{next: next}
	return &cp
}

func (t meteredTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	st, _ := r.Context().Value(callStateKey{}).(*callState)
	if st != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		st.started.Store(true)
		st.read.Store(0)
	}
	resp.Body = &limitedBody{rc: resp.Body, left: MaxResponseBytes, st: st}
	return resp, nil
}

// limitedBody fails a read that goes past MaxResponseBytes.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	st   *callState
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%w: the response passed %d bytes (the host's cap on one response)", ErrAnswerTooLong, MaxResponseBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.st != nil {
		b.st.read.Add(int64(n))
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
