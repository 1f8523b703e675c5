package model

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/weavehq/weave/config"
)

func TestSetRoutes(t *testing.T) {
	cfg := config.Default()
	cfg.Model = config.ModelConfig{Provider: "openai", Name: "gpt-4.1", ContextWindow: 64_000}
	cfg.Models = map[string]config.ModelConfig{
		"deep":  {Provider: "anthropic", Name: "claude-x", APIKeyEnv: "DEEP_CRED"},
		"flash": {Provider: "gemini", Name: "gemini-2.5-flash", APIKeyEnv: "NO_SUCH_CRED"},
	}
	env := map[string]string{"OPENAI_API_KEY": "k1", "DEEP_CRED": "k2"}
	s := OpenSet(cfg, func(k string) string { return env[k] })
	tests := []struct {
		model                         string
		entry, label, provider, sends string
		window                        int
		err                           bool
	}{
		{model: "", label: "gpt-4.1", provider: "openai", sends: "gpt-4.1", window: 64_000},
		{model: "gpt-4.1-mini", label: "gpt-4.1-mini", provider: "openai", sends: "gpt-4.1-mini", window: 64_000},
		{model: "deep", entry: "deep", label: "deep", provider: "anthropic", sends: "claude-x", window: 200_000},
		{model: "flash", entry: "flash", label: "flash", provider: "gemini", sends: "gemini-2.5-flash", window: 1_048_576, err: true},
	}
	for _, tt := range tests {
		r := s.Route(tt.model)
		if r.Entry != tt.entry || r.Label != tt.label || r.Provider != tt.provider || r.Model != tt.sends || r.Window != tt.window || (r.Err != nil) != tt.err || (r.Complete == nil) != tt.err {
			t.Errorf("Route(%q) = %+v, want entry %q label %q provider %s model %s window %d err %v", tt.model, r, tt.entry, tt.label, tt.provider, tt.sends, tt.window, tt.err)
		}
	}
	if r := s.Route("flash"); r.Err == nil || !contains(r.Err.Error(), "NO_SUCH_CRED") || !contains(r.Err.Error(), "models.flash.api_key_env") {
		t.Errorf("Route(flash).Err = %v, want it to name the empty variable and the entry's key", r.Err)
	}

	// With no model section, model.name may name the entry that is the
	// default.
	cfg.Model = config.ModelConfig{Provider: "none", Name: "deep"}
	s = OpenSet(cfg, func(k string) string { return env[k] })
	if r := s.Route(""); r.Err != nil || r.Entry != "deep" || r.Model != "claude-x" {
		t.Errorf("Route(\"\") with model.name deep = %+v, want the entry", r)
	}
	cfg.Model = config.ModelConfig{Provider: "none"}
	s = OpenSet(cfg, func(k string) string { return env[k] })
	if r := s.Route("gpt-4.1"); r.Err == nil || !strings.Contains(r.Err.Error(), "set model.name to the entry of models") || !strings.Contains(r.Err.Error(), "deep, flash") {
		t.Errorf("Route(a plain name) with no model section = %+v, want the no-model error naming the entries", r)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestFallbackReason(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		err  error
		ctx  context.Context
		want string
	}{
		{err: &APIError{Status: 429, Message: "Rate limit reached"}, want: "rate limited (429)"},
		{err: &APIError{Status: 429, Type: "insufficient_quota", Message: "You exceeded your current quota"}, want: "out of quota (429)"},
		{err: &APIError{Status: 529, Type: "overloaded_error", Message: "Overloaded"}, want: "overloaded (529)"},
		{err: &APIError{Status: 503, Message: "unavailable"}, want: "failing (503)"},
		{err: &APIError{Status: 404, Type: "model_not_found", Message: "The model `x` does not exist"}, want: "no such model (404)"},
		{err: &APIError{Status: 400, Type: "context_length_exceeded", Message: "maximum context length"}, want: ""},
		{err: &APIError{Status: 401, Message: "Incorrect API key"}, want: ""},
		{err: &APIError{Status: 400, Message: "bad request"}, want: ""},
		{err: fmt.Errorf("post: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), want: "unreachable"},
		{err: fmt.Errorf("x: %w", ErrStreamCut), want: "its answers were cut off"},
		{err: fmt.Errorf("x: %w", ErrAnswerTooLong), want: ""},
		{err: &APIError{Status: 429}, ctx: canceled, want: ""},
	}
	for _, tt := range tests {
		ctx := tt.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		if got := FallbackReason(ctx, tt.err); got != tt.want {
			t.Errorf("FallbackReason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
