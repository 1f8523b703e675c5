package model

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/anthropics/anthropic-sdk-go/option"
	openaiopt "github.com/openai/openai-go/v3/option"
)

// The SDKs retry on their own (429, 5xx, dropped connections), so only
// they know how many requests a failed call made. A counter in the call's
// context, bumped by a middleware on every request the SDK sends, lets an
// error say how many were made instead of how many were allowed.

type attemptsKey struct{}

// withAttempts returns ctx carrying a fresh request counter.
func withAttempts(ctx context.Context) (context.Context, *atomic.Int32) {
	n := new(atomic.Int32)
	return context.WithValue(ctx, attemptsKey{}, n), n
}

func countRequest(r *http.Request) {
	if n, ok := r.Context().Value(attemptsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
}

func openAICounter() openaiopt.RequestOption {
	return openaiopt.WithMiddleware(func(r *http.Request, next openaiopt.MiddlewareNext) (*http.Response, error) {
		countRequest(r)
		return next(r)
	})
}

func anthropicCounter() option.RequestOption {
	return option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		countRequest(r)
		return next(r)
	})
}

// attemptsText says how many requests a failed call made, for its error.
func attemptsText(n int32) string {
	switch n {
	case 0:
		return "before a request was sent"
	case 1:
		return "on its only request"
	}
	return fmt.Sprintf("after %d requests", n)
}
