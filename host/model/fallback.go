package model

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// FallbackReason says why err is a reason to try the next model of a
// fallback chain, or "" when it is not. A model is left when it cannot
// answer for now or at all: rate limited (429) or failing (5xx) after
// the SDK's retries, overloaded, out of quota, serving no such model, or
// unreachable. An error of the request itself (a refused key, a bad
// request, a conversation too long for the window, an answer past its
// bounds) or a call the caller ended is not: another model would fail
// the same way, or it is the person's to fix.
func FallbackReason(ctx context.Context, err error) string {
	if err == nil || ctx.Err() != nil {
		return ""
	}
	var api *APIError
	if !errors.As(err, &api) {
		switch {
		case errors.Is(err, ErrAnswerTooLong), errors.Is(err, context.Canceled):
			return ""
		case errors.Is(err, ErrStreamCut):
			return "its answers were cut off"
		case errors.Is(err, context.DeadlineExceeded):
			return "it timed out"
		}
		var op *net.OpError
		if errors.As(err, &op) {
			return "unreachable"
		}
		return ""
	}
	text := strings.ToLower(api.Type + " " + api.Message)
	switch {
	case api.contextTooLong():
		return ""
	case strings.Contains(text, "overloaded"):
		return fmt.Sprintf("overloaded (%d)", api.Status)
	case strings.Contains(text, "quota") || strings.Contains(text, "insufficient_quota") || strings.Contains(text, "billing"):
		return fmt.Sprintf("out of quota (%d)", api.Status)
	case api.Status == http.StatusTooManyRequests:
		return "rate limited (429)"
	case api.Status >= 500:
		return fmt.Sprintf("failing (%d)", api.Status)
	case api.Status == http.StatusNotFound || strings.Contains(text, "model_not_found"):
		return "no such model (404)"
	}
	return ""
}
