// Command recordhook is a hook plugin for tests: it appends "EVENT TOOL" to
// the file named by WEAVE_RECORD_FILE for every call it gets, and allows
// everything. It declares tool.execute.before for write only, and
// tool.execute.after for every tool.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/weavehq/weave/plugins"
)

type recordHook struct{}

func (recordHook) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{
		Name:    "recordhook",
		Version: "1",
		Kind:    plugins.KindHook,
		Events:  []string{plugins.EventToolExecuteBefore, plugins.EventToolExecuteAfter},
		Tools:   map[string][]string{plugins.EventToolExecuteBefore: {plugins.ToolWrite}},
	}, nil
}

func (recordHook) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	f, err := os.OpenFile(os.Getenv("WEAVE_RECORD_FILE"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return plugins.Decision{}, err
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s %s\n", ev.Name, ev.Tool); err != nil {
		return plugins.Decision{}, err
	}
	return plugins.Decision{Action: plugins.Allow}, nil
}

func main() { plugins.ServeHook(recordHook{}) }
