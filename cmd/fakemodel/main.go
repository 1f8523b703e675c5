// Command fakemodel serves a scripted fake model that speaks the OpenAI Chat
// Completions and Anthropic Messages wire formats, for trying weave, hooks
// and plugins without a provider account (`weave fakemodel` is the same
// command in the weave binary):
//
//	go run ./cmd/fakemodel --script turns.json
//
// It prints its URL on the first line of stdout, then one line per request
// on stderr, and serves until interrupted. Point weave at it with
// WEAVE_MODEL_BASE_URL=<url>/v1 (provider openai) or <url> (anthropic). See
// docs/fake-model.md for the script format.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/weavehq/weave/host/model/modeltest"
)

func main() {
	// The signals are caught before the URL is printed: whoever reads it
	// may ask and then stop the server before this goroutine runs again.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := modeltest.Main(ctx, "fakemodel", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
