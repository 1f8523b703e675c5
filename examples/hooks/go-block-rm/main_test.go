package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/plugintest"
)

func bash(command string) plugins.Event {
	return plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolBash, Args: map[string]any{"command": command}}
}

func TestHandle(t *testing.T) {
	// The hook as the host sees it: served over a real gRPC connection.
	hook := plugintest.ConnectHook(t, blockRm{})
	tests := []struct {
		name string
		ev   plugins.Event
		// target is part of the reason when the call must be blocked; empty
		// means allowed.
		target string
	}{
		{"root", bash("rm -rf /"), "the whole filesystem"},
		{"flags reversed", bash("rm -fr /"), "the whole filesystem"},
		{"flags split", bash("rm -r -f /"), "the whole filesystem"},
		{"capital R", bash("rm -Rf /"), "the whole filesystem"},
		{"long flags", bash("rm --recursive --force /"), "the whole filesystem"},
		{"no preserve root", bash("rm -rf --no-preserve-root /"), "the whole filesystem"},
		{"no preserve root alone", bash("rm -r --no-preserve-root /tmp/x"), "--no-preserve-root"},
		{"sudo", bash("sudo rm -rf /"), "the whole filesystem"},
		{"sudo with user", bash("sudo -u root rm -rf /"), "the whole filesystem"},
		{"env assignment", bash("LANG=C rm -rf /"), "the whole filesystem"},
		{"root glob", bash("rm -rf /*"), "the whole filesystem"},
		{"root via dotdot", bash("rm -rf /tmp/../"), "the whole filesystem"},
		{"quoted root", bash(`rm -rf "/"`), "the whole filesystem"},
		{"after double dash", bash("rm -rf -- /"), "the whole filesystem"},
		{"home tilde", bash("rm -rf ~"), "the home directory"},
		{"home slash", bash("rm -rf ~/"), "the home directory"},
		{"home glob", bash("rm -rf ~/*"), "the home directory"},
		{"home var", bash(`rm -rf "$HOME"`), "the home directory"},
		{"home braces", bash("rm -rf ${HOME}/"), "the home directory"},
		{"star", bash("rm -rf *"), "everything in the working directory"},
		{"dot", bash("rm -rf ."), "everything in the working directory"},
		{"dotdot", bash("rm -rf .."), "everything in the working directory"},
		{"system dir", bash("rm -rf /usr"), "the system directory /usr"},
		{"system dir glob", bash("rm -rf /etc/*"), "the system directory /etc"},
		{"second command", bash("cd build && rm -rf *"), "everything in the working directory"},
		{"after semicolon", bash("echo hi; rm -rf /"), "the whole filesystem"},
		{"in a pipe", bash("yes | rm -rf ~"), "the home directory"},
		{"command substitution", bash("echo $(rm -rf /)"), "the whole filesystem"},
		{"subshell", bash("(cd /tmp; rm -rf /)"), "the whole filesystem"},
		{"sh -c", bash(`sh -c "rm -rf /"`), "the whole filesystem"},
		{"bash -ec", bash(`bash -ec 'rm -rf ~'`), "the home directory"},
		{"full path rm", bash("/bin/rm -rf /"), "the whole filesystem"},
		{"second operand", bash("rm -rf build /"), "the whole filesystem"},

		{"build dir", bash("rm -rf build"), ""},
		{"tmp path", bash("rm -rf /tmp/weave-test"), ""},
		{"home subdir", bash("rm -rf ~/.cache/weave"), ""},
		{"not recursive", bash("rm -f /tmp/x"), ""},
		{"plain rm of star is not recursive", bash("rm *.o"), ""},
		{"rm in a string", bash(`echo "rm -rf /"`), ""},
		{"rm in single quotes", bash(`git commit -m 'rm -rf / is blocked'`), ""},
		{"comment", bash("ls # rm -rf /"), ""},
		{"dot subdir", bash("rm -rf ./build"), ""},
		{"grep for rm", bash("grep -r 'rm -rf' ."), ""},
		{"other tool", plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolWrite, Args: map[string]any{"path": "x", "content": "rm -rf /"}}, ""},
		{"no command", plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolBash}, ""},
		{"command not a string", plugins.Event{Name: plugins.EventToolExecuteBefore, Tool: plugins.ToolBash, Args: map[string]any{"command": 42}}, ""},
		{"other event", plugins.Event{Name: plugins.EventToolExecuteAfter, Tool: plugins.ToolBash, Args: map[string]any{"command": "rm -rf /"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := hook.Handle(context.Background(), tc.ev)
			if err != nil {
				t.Fatalf("Handle(%v) error: %v", tc.ev.Args, err)
			}
			if tc.target == "" {
				if d.Action != plugins.Allow {
					t.Errorf("Handle(%v) = %s (%s), want allow", tc.ev.Args, d.Action, d.Reason)
				}
				return
			}
			if d.Action != plugins.Block || !strings.Contains(d.Reason, tc.target) {
				t.Errorf("Handle(%v) = %s %q, want block naming %q", tc.ev.Args, d.Action, d.Reason, tc.target)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	hook := plugintest.ConnectHook(t, blockRm{})
	got, err := hook.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := plugins.Info{Name: "go-block-rm", Version: version, Kind: plugins.KindHook, Events: []string{plugins.EventToolExecuteBefore},
		Tools: map[string][]string{plugins.EventToolExecuteBefore: {plugins.ToolBash}}, Priority: 10}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Info() mismatch (-want +got):\n%s", diff)
	}
}
