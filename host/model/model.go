// Package model is the host's room for model providers. One small interface,
// Provider, answers a chat; each provider (OpenAI-compatible Chat
// Completions, Anthropic Messages, Azure OpenAI, Gemini through its
// OpenAI-compatible endpoint) lives in its own file and is registered
// by one row of the provider table in providers.go. A Set (set.go) opens
// every model a config names, the model section and each entry of
// models, and routes a request by the model it names; FallbackReason
// (fallback.go) says which failures are a reason to try another model.
// Reasoning settings go to each vendor its own way: reasoning_effort on
// the OpenAI wire, extended thinking (whose signed thinking goes back with
// the tool calls it led to, thoughts.go) on Anthropic's. The host holds the API key: it is read from
// the environment variable the config names, given to the provider's SDK and
// never logged, persisted or passed to a plugin.
//
// Retries are the official SDKs' own: both retry 408, 409, 429, 5xx and
// connection errors with exponential backoff and jitter, honouring the
// server's Retry-After (seconds or HTTP date) and Retry-After-Ms headers.
// Settings.MaxRetries sets how many times. They end where the answer's
// body begins; a stream cut after that, one that ends before its finish
// event, or one that is not a stream, is asked again here, as often and
// with the same backoff, and is an error wrapping ErrStreamCut when every
// try was cut: half an answer is never an answer.
//
// Every answer is bounded while it arrives (bounds.go): its max_tokens, a
// byte cap on its content (MaxAnswerBytes) and one on each response
// (MaxResponseBytes); past one the call fails with ErrAnswerTooLong.
//
// Servers that speak the OpenAI wire format but differ in the details
// (Ollama, vLLM, llama.cpp server, LM Studio, OpenRouter) are handled in
// openai.go: tool-call deltas without an index or an id, finish reasons
// spelled differently, and streams without usage (then usage is estimated
// from the text, about four characters a token, so that the context-window
// monitor still has a figure).
package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/plugins"
)

// Provider answers chats with one model service.
type Provider interface {
	// Complete asks for the next assistant message of req. When onDelta is
	// not nil the answer is streamed and onDelta is called, on the calling
	// goroutine and in order, with each piece of text and each tool call as
	// it starts; the full answer is returned at the end either way.
	// A provider also reports each piece of the answer that is not shown
	// (a tool call's arguments, thinking) as a Delta with Hidden set, so
	// that the answer's bounds count it (bounds.go); New's wrapper does not
	// pass those on. A stream that ends before its finish event is an
	// error wrapping ErrStreamCut, never an answer.
	Complete(ctx context.Context, req plugins.ChatRequest, onDelta func(Delta)) (plugins.ChatResponse, error)
}

// Delta is one piece of a streamed answer: either Text or a ToolCall that
// has started (its ID and tool name are known, its arguments not yet).
//
// Retry, when set, says that the stream was cut and the call is asked
// again (it gives the reason): whatever was streamed before it is void, and
// the deltas that follow are a new answer.
type Delta struct {
	Text     string
	ToolCall *plugins.ToolCall
	Retry    string
	// Hidden is a piece a provider reports only to be counted (see
	// Provider); it never reaches the caller's onDelta.
	Hidden string
}

// Settings configure a provider. They come from the model section of the
// config (see FromConfig); APIKey is the key itself, read from the
// environment, and is never printed.
type Settings struct {
	// Provider names a row of the provider table (providers.go).
	Provider string
	// Name is the default model; a request's Model overrides it.
	Name    string
	BaseURL string
	// KeyEnv is the name of the variable APIKey came from, for messages.
	KeyEnv string
	APIKey string
	// MaxTokens bounds an answer; 0 means the provider's default (none
	// sent for OpenAI, DefaultAnthropicMaxTokens for Anthropic).
	MaxTokens int
	// Timeout bounds one Complete, retries included; 0 means no limit.
	Timeout time.Duration
	// MaxRetries is how often a failed call is retried; see the package doc.
	MaxRetries int
	// HTTPClient, when set, carries the requests (tests, proxies).
	HTTPClient *http.Client
	// ReasoningEffort is sent as reasoning_effort (the OpenAI wire); "":
	// none. ThinkingBudget turns on thinking with that many tokens
	// (Anthropic's extended thinking, Gemini's thinking_budget); 0: off.
	ReasoningEffort string
	ThinkingBudget  int
	// Azure is Azure OpenAI's endpoint, API version and deployment.
	Azure config.AzureConfig
	// Key is where these settings are configured, for messages: "model"
	// (the model section) or "models.<entry>".
	Key string
}

// key is the config key prefix messages name.
func (s Settings) key() string {
	if s.Key == "" {
		return "model"
	}
	return s.Key
}

// DefaultMaxRetries is how often a call that failed with 429, 5xx or a
// broken connection is retried.
const DefaultMaxRetries = 4

// FromConfig reads the model section and the key variable it names. getenv
// is os.Getenv in production. It fails with a message naming the config
// keys to set when no model is configured or the key variable is empty.
func FromConfig(c config.ModelConfig, getenv func(string) string) (Settings, error) {
	return fromConfig("model", c, getenv)
}

// FromEntry is FromConfig for the entry models.<name>.
func FromEntry(name string, c config.ModelConfig, getenv func(string) string) (Settings, error) {
	return fromConfig("models."+name, c, getenv)
}

func fromConfig(key string, c config.ModelConfig, getenv func(string) string) (Settings, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if c.Provider == "" || c.Provider == "none" {
		if key != "model" {
			return Settings{}, fmt.Errorf("%s.provider is empty: set it to %s", key, Choices())
		}
		return Settings{}, fmt.Errorf("%w (%s) and model.name, or WEAVE_MODEL_PROVIDER and WEAVE_MODEL_NAME", plugins.ErrNoModel, Choices())
	}
	p, ok := lookup(c.Provider)
	if !ok {
		return Settings{}, fmt.Errorf("%s.provider %q is not one of %s", key, c.Provider, strings.Join(Names(), ", "))
	}
	s := Settings{
		Provider: c.Provider, Name: c.Name, BaseURL: c.BaseURL, KeyEnv: c.APIKeyEnv,
		MaxTokens: c.MaxTokens, Timeout: c.Timeout, MaxRetries: DefaultMaxRetries,
		ReasoningEffort: c.ReasoningEffort, ThinkingBudget: c.ThinkingBudget, Azure: c.Azure, Key: key,
	}
	if s.Name == "" {
		s.Name = c.Azure.Deployment
	}
	if s.Name == "" {
		if key != "model" {
			return Settings{}, fmt.Errorf("%s.name is empty: set it to the model to use, e.g. %s", key, exampleModel(c.Provider))
		}
		return Settings{}, fmt.Errorf("model.provider is %s but model.name is empty: set model.name (or WEAVE_MODEL_NAME) to the model to use, e.g. %s", c.Provider, exampleModel(c.Provider))
	}
	if s.ThinkingBudget > 0 && s.MaxTokens == 0 && p.MaxTokens > 0 {
		// The answer comes after the thinking, within max_tokens.
		s.MaxTokens = s.ThinkingBudget + p.MaxTokens
	}
	if s.KeyEnv == "" {
		s.KeyEnv = DefaultKeyEnv(c.Provider)
	}
	s.APIKey = getenv(s.KeyEnv)
	// Local servers (Ollama, llama.cpp, LM Studio) need no key; the
	// provider's own endpoint always does.
	if s.APIKey == "" && s.BaseURL == "" {
		return Settings{}, fmt.Errorf("the %s API key variable %s is empty: export %s=<your key>, or set %s.api_key_env to the variable that holds it (or %s.base_url for a local server that needs no key)", c.Provider, s.KeyEnv, s.KeyEnv, key, key)
	}
	return s, nil
}

// New returns the provider s names, wrapped so that Settings.Timeout bounds
// each call and provider errors say what to change.
func New(s Settings) (Provider, error) {
	p, ok := lookup(s.Provider)
	if !ok {
		return nil, fmt.Errorf("model.provider %q is not one of %s", s.Provider, strings.Join(Names(), ", "))
	}
	if s.HTTPClient == nil {
		s.HTTPClient = &http.Client{}
	}
	// Every response body passes the meter, whoever built the client.
	s.HTTPClient = meteredClient(s.HTTPClient)
	return bounded{p: p.New(s), s: s, defaultMaxTokens: p.MaxTokens}, nil
}

// Open is FromConfig followed by New.
func Open(c config.ModelConfig, getenv func(string) string) (Provider, error) {
	s, err := FromConfig(c, getenv)
	if err != nil {
		return nil, err
	}
	return New(s)
}

// bounded applies the timeout and the answer's bounds, asks again when a
// stream was cut, and turns provider errors into messages that say what to
// change.
type bounded struct {
	p Provider
	s Settings
	// defaultMaxTokens is the provider's bound on an answer when neither
	// the request nor model.max_tokens sets one; 0: none.
	defaultMaxTokens int
}

func (b bounded) Complete(ctx context.Context, req plugins.ChatRequest, onDelta func(Delta)) (plugins.ChatResponse, error) {
	if b.s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.s.Timeout)
		defer cancel()
	}
	if req.Model == "" {
		req.Model = b.s.Name
	}
	ctx, sent := withAttempts(ctx)
	var resp plugins.ChatResponse
	var err error
	for attempt := 0; ; attempt++ {
		resp, err = b.once(ctx, req, onDelta)
		if err == nil || !errors.Is(err, ErrStreamCut) || attempt >= b.s.MaxRetries || ctx.Err() != nil {
			break
		}
		if onDelta != nil {
			onDelta(Delta{Retry: fmt.Sprintf("%v; asking again (%d of %d)", err, attempt+1, b.s.MaxRetries)})
		}
		if !sleepCtx(ctx, retryDelay(attempt)) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, ErrStreamCut) && ctx.Err() == nil {
			err = fmt.Errorf("%w (tried %d times)", err, b.s.MaxRetries+1)
		}
		return resp, explain(ctx, err, b.s, req.Model, sent.Load())
	}
	if resp.Model == "" {
		resp.Model = req.Model
	}
	return resp, nil
}

// once is one call to the provider, metered: the pieces of its answer
// count against the answer's bounds, and a failure to read an answer whose
// body had begun is a cut stream.
func (b bounded) once(ctx context.Context, req plugins.ChatRequest, onDelta func(Delta)) (plugins.ChatResponse, error) {
	st := &callState{}
	callCtx, cancel := context.WithCancelCause(withCallState(ctx, st))
	defer cancel(nil)
	m := meter{maxTokens: b.maxTokens(req)}
	var metered func(Delta)
	if onDelta != nil {
		metered = func(d Delta) {
			if callCtx.Err() != nil {
				return
			}
			if err := m.add(len(d.Text) + len(d.Hidden)); err != nil {
				// The provider's stream ends with the context; its
				// error is replaced by this one below.
				cancel(err)
				return
			}
			if d.Text != "" || d.ToolCall != nil {
				onDelta(Delta{Text: d.Text, ToolCall: d.ToolCall})
			}
		}
	}
	resp, err := b.p.Complete(callCtx, req, metered)
	if err == nil && onDelta == nil {
		// An answer that was not streamed is counted whole.
		n := len(resp.Message.Content)
		for _, c := range resp.Message.ToolCalls {
			for k, v := range c.Args {
				n += len(k) + len(fmt.Sprint(v))
			}
		}
		if n > MaxAnswerBytes {
			return plugins.ChatResponse{}, fmt.Errorf("%s model answer of %d bytes: %w: more than %d bytes (the host's cap on one answer)", b.s.Provider, n, ErrAnswerTooLong, MaxAnswerBytes)
		}
	}
	if cause := context.Cause(callCtx); errors.Is(cause, ErrAnswerTooLong) {
		return plugins.ChatResponse{}, fmt.Errorf("%s model answer stopped after %d bytes in %d pieces: %w", b.s.Provider, m.bytes, m.pieces, cause)
	}
	var re *readError
	if errors.As(err, &re) {
		err = re.err
		if st.started.Load() && ctx.Err() == nil && !errors.Is(err, ErrAnswerTooLong) {
			err = fmt.Errorf("%w: reading the answer failed after %d bytes: %v", ErrStreamCut, st.read.Load(), err)
		}
	}
	return resp, err
}

// maxTokens is the bound on req's answer: the request's, else
// model.max_tokens, else the provider's default; 0: none.
func (b bounded) maxTokens(req plugins.ChatRequest) int {
	switch {
	case req.MaxTokens > 0:
		return req.MaxTokens
	case b.s.MaxTokens > 0:
		return b.s.MaxTokens
	}
	return b.defaultMaxTokens
}

// readError is a provider's failure to read an answer from its SDK: a cut
// stream when the answer's body had begun, else a failure the SDK has
// retried already (a refused connection).
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// retryDelay is the wait before asking again after attempt (0-based) was
// cut: as the SDKs wait after a 5xx, half a second doubling up to 8
// seconds, less up to a quarter of jitter.
func retryDelay(attempt int) time.Duration {
	d := min(500*time.Millisecond<<min(attempt, 5), 8*time.Second)
	return d - time.Duration(rand.Int64N(int64(d/4)+1))
}

// sleepCtx waits d or until ctx ends, and reports whether it waited d.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Lister is a provider that can say which models it serves.
type Lister interface {
	Models(ctx context.Context) ([]string, error)
}

// Models asks the provider which models it serves: a call that costs no
// tokens, for checking that the endpoint answers and the key is accepted.
// It is bounded by Settings.Timeout, and its errors say what to change.
func Models(ctx context.Context, p Provider) ([]string, error) {
	b, ok := p.(bounded)
	if !ok {
		return nil, errors.New("this provider cannot list its models")
	}
	l, ok := b.p.(Lister)
	if !ok {
		return nil, fmt.Errorf("%s cannot list its models", b.s.Provider)
	}
	if b.s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.s.Timeout)
		defer cancel()
	}
	ctx, sent := withAttempts(ctx)
	names, err := l.Models(ctx)
	if err != nil {
		return nil, explain(ctx, err, b.s, b.s.Name, sent.Load())
	}
	return names, nil
}
