package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// APIError is a provider's error answer, reduced to what the host needs to
// explain it: the HTTP status and the provider's own message.
type APIError struct {
	Provider string
	Status   int
	// Type and Message are the provider's error type and text, if it sent
	// them (e.g. "context_length_exceeded", "rate_limit_error").
	Type    string
	Message string
	// Advice says what to change; Error prints it after the provider's words.
	Advice string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s answered %d %s", e.Provider, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Advice != "" {
		fmt.Fprintf(&b, " (%s)", e.Advice)
	}
	return b.String()
}

// ErrContextTooLong is wrapped by errors saying the chat no longer fits the
// model's context window; a caller may compact and retry.
var ErrContextTooLong = errors.New("the conversation is longer than the model's context window")

func (e *APIError) Unwrap() error {
	if e.contextTooLong() {
		return ErrContextTooLong
	}
	return nil
}

func (e *APIError) contextTooLong() bool {
	if e.Status != http.StatusBadRequest && e.Status != http.StatusRequestEntityTooLarge {
		return false
	}
	text := strings.ToLower(e.Type + " " + e.Message)
	for _, s := range []string{"context_length_exceeded", "context length", "context window", "prompt is too long", "too many tokens", "maximum context", "exceeds the context"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// explain adds to a provider error what the person should change. It never
// includes the key, only the name of the variable that holds it. sent is
// how many requests the call made, retries included.
func explain(ctx context.Context, err error, s Settings, modelName string, sent int32) error {
	var api *APIError
	if !errors.As(err, &api) {
		where := s.BaseURL
		if where == "" {
			where = "the " + s.Provider + " API"
		}
		if errors.Is(err, ErrAnswerTooLong) {
			return fmt.Errorf("%w (the endpoint %s sent more than an answer can hold: check %s.base_url; a real answer this long needs a lower %s.max_tokens or a shorter request)", err, where, s.key(), s.key())
		}
		if errors.Is(err, ErrStreamCut) && ctx.Err() == nil {
			return fmt.Errorf("%s model call to %s: %w (the answer so far was dropped: check %s.base_url and the network, or try again)", s.Provider, where, err, s.key())
		}
		if errors.Is(err, context.DeadlineExceeded) && s.Timeout > 0 && ctx.Err() != nil {
			return fmt.Errorf("%s model call took longer than %s.timeout (%s): raise it or use a faster model: %w", s.Provider, s.key(), s.Timeout, err)
		}
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%s model call to %s failed %s: %w (check %s.base_url and the network)", s.Provider, where, attemptsText(sent), err, s.key())
	}
	switch {
	case api.Status == http.StatusUnauthorized || api.Status == http.StatusForbidden:
		api.Advice = fmt.Sprintf("the key in %s was refused: check it, or set %s.api_key_env to the variable that holds a valid key", s.KeyEnv, s.key())
	case api.Status == http.StatusNotFound:
		api.Advice = fmt.Sprintf("no model %q here: set %s.name (or agents.<name>.model) to a model this provider serves", modelName, s.key())
		if s.BaseURL != "" {
			api.Advice += fmt.Sprintf(", and check %s.base_url (%s)", s.key(), s.BaseURL)
		}
	case api.contextTooLong():
		api.Advice = "the conversation no longer fits the model's context window: start a new session, compact it, or lower context_window.compact_ratio / set model.context_window to the model's real size"
	case api.Status == http.StatusTooManyRequests:
		api.Advice = fmt.Sprintf("still rate limited %s: wait, or raise the account's limits", attemptsText(sent))
	case api.Status >= 500:
		api.Advice = fmt.Sprintf("the provider failed %s: try again later", attemptsText(sent))
	case api.Status == http.StatusBadRequest:
		api.Advice = fmt.Sprintf("the provider rejected the request: check %s.name and %s.max_tokens", s.key(), s.key())
	}
	return api
}
