package tools

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

// funcHook is an in-process hook plugin.
type funcHook struct {
	name   string
	events []string
	handle func(ev plugins.Event) plugins.Decision

	mu   sync.Mutex
	seen []plugins.Event
}

func (h *funcHook) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: h.name, Kind: plugins.KindHook, Events: h.events}, nil
}

func (h *funcHook) Handle(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
	h.mu.Lock()
	h.seen = append(h.seen, ev)
	h.mu.Unlock()
	return h.handle(ev), nil
}

func (h *funcHook) seenEvents() []plugins.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]plugins.Event(nil), h.seen...)
}

func pipelineOf(t *testing.T, hs ...*funcHook) *hooks.Pipeline {
	t.Helper()
	var regs []hooks.Registered
	for _, h := range hs {
		info, _ := h.Info(context.Background())
		regs = append(regs, hooks.Registered{Hook: h, Info: info, Source: hooks.SourcePlugin})
	}
	p, err := hooks.NewPipeline(regs, hooks.Options{})
	if err != nil {
		t.Fatalf("NewPipeline: %v", err)
	}
	return p
}

func TestToolsHooksOnTheToolPath(t *testing.T) {
	noRmRf := &funcHook{name: "no-rm-rf", events: []string{plugins.EventToolExecuteBefore}, handle: func(ev plugins.Event) plugins.Decision {
		if cmd, _ := ev.Args["command"].(string); ev.Tool == plugins.ToolBash && strings.Contains(cmd, "rm -rf") {
			return plugins.Decision{Action: plugins.Block, Reason: "rm -rf is not allowed here; delete files one by one"}
		}
		return plugins.Decision{Action: plugins.Allow}
	}}
	shout := &funcHook{name: "shout", events: []string{plugins.EventToolExecuteBefore}, handle: func(ev plugins.Event) plugins.Decision {
		if ev.Tool != plugins.ToolWrite {
			return plugins.Decision{}
		}
		args := map[string]any{}
		for k, v := range ev.Args {
			args[k] = v
		}
		args["content"] = strings.ToUpper(args["content"].(string))
		if p, _ := args["path"].(string); strings.HasSuffix(p, "redirect.md") {
			args["path"] = "src/main.go" // a hook must not lead a scoped agent out of its scope
		}
		return plugins.Decision{Action: plugins.Modify, Args: args}
	}}
	remind := &funcHook{name: "remind", events: []string{plugins.EventToolExecuteAfter}, handle: func(ev plugins.Event) plugins.Decision {
		if ev.Tool == plugins.ToolWrite && ev.Result != nil && !ev.Result.IsError {
			return plugins.Decision{Context: "run the tests after writing " + ev.Args["path"].(string)}
		}
		return plugins.Decision{}
	}}
	e := newToolsEnv(t, nil, pipelineOf(t, noRmRf, shout, remind))

	t.Run("block", func(t *testing.T) {
		writeFile(t, e.project+"/keep.txt", "x")
		res := e.call(t, asTapestry, "bash", map[string]any{"command": "rm -rf keep.txt"})
		if !res.Denied || !res.IsError {
			t.Fatalf("bash rm -rf = %+v, want denied", res)
		}
		expect(t, "blocked bash", res, true, "blocked by hook no-rm-rf: rm -rf is not allowed here; delete files one by one")
		// The person reads the hook's decision in its own words.
		if res.BlockedBy != "no-rm-rf" || res.Reason != "rm -rf is not allowed here; delete files one by one" {
			t.Errorf("blocked bash: BlockedBy %q, Reason %q; want the hook and its reason", res.BlockedBy, res.Reason)
		}
		if got := e.file(t, "keep.txt"); got != "x" {
			t.Errorf("keep.txt = %q: the blocked command ran", got)
		}
		evs := e.events.all()
		if len(evs) == 0 || evs[len(evs)-1].Data["by"] != "no-rm-rf" || evs[len(evs)-1].Name != EventToolDenied {
			t.Errorf("events = %+v, want a denial by no-rm-rf", evs)
		}
	})
	t.Run("modify", func(t *testing.T) {
		res := e.call(t, asTapestry, "write", map[string]any{"path": "note.txt", "content": "hello"})
		expect(t, "modified write", res, false, "wrote 5 bytes to note.txt")
		if got := e.file(t, "note.txt"); got != "HELLO" {
			t.Errorf("note.txt = %q, want the hook's modified content %q", got, "HELLO")
		}
		// What ran is shown as modified, with the hook that changed it.
		if !strings.HasPrefix(res.Output, "[write modified by hook shout: ran ") || !strings.Contains(res.Output, `"content":"HELLO"`) {
			t.Errorf("modified write output = %q, want it marked as modified by shout", res.Output)
		}
	})
	t.Run("after hooks add context under a marker", func(t *testing.T) {
		res := e.call(t, asTapestry, "write", map[string]any{"path": "n2.txt", "content": "a"})
		want := `[write modified by hook shout: ran {"content":"A","path":"n2.txt"}]` + "\n" + "wrote 1 bytes to n2.txt" + hookContextMarker + "run the tests after writing n2.txt"
		if res.Output != want {
			t.Errorf("write output = %q, want %q", res.Output, want)
		}
	})
	t.Run("modified args pass the gate again", func(t *testing.T) {
		res := e.call(t, Caller{Agent: "pattern"}, "write", map[string]any{"path": ".weave/plans/redirect.md", "content": "# p"})
		expect(t, "redirected write", res, true, "may only write .md files under .weave/", "src/main.go")
		if !res.Denied || res.BlockedBy != "" || !strings.HasPrefix(res.Reason, "denied by the capability matrix (pattern may only write") {
			t.Errorf("redirected write = %+v, want denied by the gate, not a hook, with the gate's reason", res)
		}
		if got := e.file(t, "src/main.go"); got != "package main\n" {
			t.Errorf("src/main.go = %q: a hook led pattern out of its scope", got)
		}
	})
	t.Run("hooks see the caller, session and project", func(t *testing.T) {
		evs := noRmRf.seenEvents()
		if len(evs) == 0 {
			t.Fatal("the before hook saw no events")
		}
		ev := evs[0]
		if ev.Agent != "tapestry" || ev.SessionID != "s1" || ev.Cwd != e.project || ev.Name != plugins.EventToolExecuteBefore {
			t.Errorf("before event = %+v, want agent tapestry, session s1, cwd %s", ev, e.project)
		}
	})
	t.Run("a gate denial never reaches the hooks", func(t *testing.T) {
		n := len(noRmRf.seenEvents())
		e.call(t, Caller{Agent: "weft"}, "edit", map[string]any{"path": "note.txt", "old_string": "H", "new_string": "h"})
		if got := len(noRmRf.seenEvents()); got != n {
			t.Errorf("hooks ran %d times for a call the gate denied", got-n)
		}
	})
}
