package modeltest

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// DemoScript is what the command serves without --script: one default
// turn, so that a newcomer can talk to any agent offline and see where a
// script goes.
var DemoScript = []Turn{{Default: true, Text: "Hello from weave's fake model. I answer from a script, not from a model: " +
	"give `weave fakemodel --script turns.json` a script of turns (docs/fake-model.md) to make the agents call tools."}}

// Main is the fake model's command line (`weave fakemodel` and
// cmd/fakemodel): it serves a script until ctx ends, printing the URL on
// the first line of stdout and how to point weave at it on stderr. It
// returns the exit code.
func Main(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	script := fs.String("script", "", "JSON file of turns to answer (docs/fake-model.md); default: a demo that answers every request")
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	quiet := fs.Bool("quiet", false, "do not print a line per request")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q; the script goes in --script FILE\n", name, fs.Arg(0))
		return 2
	}
	turns := DemoScript
	if *script != "" {
		var err error
		if turns, err = LoadScript(*script); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
	}
	var log io.Writer = stderr
	if *quiet {
		log = nil
	}
	srv, err := Listen(*addr, turns, log)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	defer srv.Close()
	fmt.Fprintln(stdout, srv.URL)
	fmt.Fprintf(stderr, "%s: %d turn(s); point weave at it, in another terminal:\n"+
		"  export WEAVE_MODEL_PROVIDER=openai WEAVE_MODEL_NAME=fake WEAVE_MODEL_BASE_URL=%s\n"+
		"(anthropic: WEAVE_MODEL_PROVIDER=anthropic WEAVE_MODEL_BASE_URL=%s); Ctrl-C stops it\n", name, len(turns), srv.OpenAIURL(), srv.URL)
	<-ctx.Done()
	return 0
}
