// Command go-block-rm is a Weave hook plugin that refuses shell commands
// which would recursively delete the filesystem root, the home directory, a
// top-level system directory or everything in the working directory
// (`rm -rf /`, `sudo rm -fr --no-preserve-root /`, `rm -r ~`, `rm -rf *`).
// Every other call is allowed.
//
// Build it into a project's plugin directory and weave loads it:
//
//	go build -o .weave/plugins/go-block-rm ./examples/hooks/go-block-rm
//	weave hooks list
package main

import (
	"context"
	"fmt"

	"github.com/weavehq/weave/plugins"
)

// version is the plugin's version, as `weave plugins list` shows it.
const version = "1.0.0"

// blockRm is the hook. It holds no state, so it is safe for concurrent use.
type blockRm struct{}

// Info subscribes to tool.execute.before, for bash only: weave never calls
// it for another tool. The low priority runs it
// before most hooks, so a destructive call is refused before anything else
// reacts to it.
func (blockRm) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{
		Name:     "go-block-rm",
		Version:  version,
		Kind:     plugins.KindHook,
		Events:   []string{plugins.EventToolExecuteBefore},
		Tools:    map[string][]string{plugins.EventToolExecuteBefore: {plugins.ToolBash}},
		Priority: 10,
	}, nil
}

// Handle blocks a bash call whose command would delete too much.
func (blockRm) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	if ev.Name != plugins.EventToolExecuteBefore || ev.Tool != plugins.ToolBash {
		return plugins.Decision{Action: plugins.Allow}, nil
	}
	command, _ := ev.Args["command"].(string)
	if f, ok := findDangerousRm(command); ok {
		return plugins.Decision{
			Action: plugins.Block,
			Reason: fmt.Sprintf("go-block-rm: refusing %q: it would delete %s; delete the specific files or directories you mean instead", f.Command, f.Target),
		}, nil
	}
	return plugins.Decision{Action: plugins.Allow}, nil
}

func main() { plugins.ServeHook(blockRm{}) }

var _ plugins.Hook = blockRm{}
