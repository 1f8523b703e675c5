// Command crashhook is a hook plugin for tests: a guard of bash calls that
// allows the first one and dies in the middle of the second, as a plugin
// with a fatal bug would. It counts calls in the file named by
// WEAVE_CRASH_COUNT, so that a restarted process goes on counting.
package main

import (
	"context"
	"os"
	"strings"

	"github.com/weavehq/weave/plugins"
)

type crashHook struct{}

func (crashHook) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{
		Name:    "crashhook",
		Version: "1",
		Kind:    plugins.KindHook,
		Events:  []string{plugins.EventToolExecuteBefore},
		Tools:   map[string][]string{plugins.EventToolExecuteBefore: {plugins.ToolBash}},
	}, nil
}

func (crashHook) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	path := os.Getenv("WEAVE_CRASH_COUNT")
	b, _ := os.ReadFile(path)
	calls := strings.Count(string(b), "\n") + 1
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return plugins.Decision{}, err
	}
	if calls >= 2 {
		os.Exit(3)
	}
	return plugins.Decision{Action: plugins.Allow}, nil
}

func main() { plugins.ServeHook(crashHook{}) }
