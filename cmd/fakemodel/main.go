// Command fakemodel serves a scripted fake model that speaks the OpenAI Chat
// Completions and Anthropic Messages wire formats, for trying weave, hooks
// and plugins without a provider account:
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
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/weavehq/weave/host/model/modeltest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakemodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	script := fs.String("script", "", "JSON file of turns to answer, in order (required)")
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	quiet := fs.Bool("quiet", false, "do not print a line per request")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *script == "" {
		fmt.Fprintln(stderr, "fakemodel: --script FILE is required (a JSON array of turns; see docs/fake-model.md)")
		return 2
	}
	turns, err := modeltest.LoadScript(*script)
	if err != nil {
		fmt.Fprintf(stderr, "fakemodel: %v\n", err)
		return 1
	}
	var log io.Writer = stderr
	if *quiet {
		log = nil
	}
	srv, err := modeltest.Listen(*addr, turns, log)
	if err != nil {
		fmt.Fprintf(stderr, "fakemodel: %v\n", err)
		return 1
	}
	defer srv.Close()
	// The signals are caught before the URL is printed: whoever reads it
	// may ask and then stop the server before this goroutine runs again.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintln(stdout, srv.URL)
	fmt.Fprintf(stderr, "fakemodel: %d turns; openai base_url %s, anthropic base_url %s\n", len(turns), srv.OpenAIURL(), srv.URL)
	<-ctx.Done()
	return 0
}
