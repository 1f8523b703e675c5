package pluginhost

import (
	"bytes"
	"context"
	"errors"
	"log"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weavehq/weave/plugins"
)

type testHook struct {
	info plugins.Info
	err  error
}

func (h testHook) Info(context.Context) (plugins.Info, error) { return h.info, h.err }
func (h testHook) Handle(context.Context, plugins.Event) (plugins.Decision, error) {
	return plugins.Decision{Action: plugins.Allow}, nil
}

type testAgent struct{ info plugins.Info }

func (a testAgent) Info(context.Context) (plugins.Info, error) { return a.info, nil }
func (a testAgent) Handle(context.Context, plugins.Host, plugins.AgentRequest) (plugins.AgentResponse, error) {
	return plugins.AgentResponse{}, nil
}

// keepLogging restores the process's loggers, which serving a plugin points
// at the plugin's stderr, when the test ends.
func keepLogging(t *testing.T) {
	t.Helper()
	def, out, flags := slog.Default(), log.Writer(), log.Flags()
	t.Cleanup(func() {
		slog.SetDefault(def)
		log.SetOutput(out)
		log.SetFlags(flags)
	})
}

func TestRegistry(t *testing.T) {
	keepLogging(t)
	reg := NewRegistry()
	reg.RegisterHook("hooks.start-work", testHook{info: plugins.Info{Name: "start-work", Events: []string{plugins.EventCommandExecuteBefore}}})
	reg.RegisterAgent("agents.tapestry", testAgent{info: plugins.Info{Name: "tapestry", Role: "tapestry"}})
	if diff := cmp.Diff([]string{"agents.tapestry", "hooks.start-work"}, reg.IDs()); diff != "" {
		t.Errorf("IDs mismatch (-want +got):\n%s", diff)
	}
	if cfg, ok := reg.Lookup("agents.tapestry"); !ok || cfg.Agent == nil || cfg.Hook != nil {
		t.Errorf("Lookup(agents.tapestry) = %+v, %v; want the agent", cfg, ok)
	}

	panics := []struct {
		name string
		f    func()
	}{
		{"duplicate", func() { reg.RegisterHook("hooks.start-work", testHook{}) }},
		{"duplicate across kinds", func() { reg.RegisterAgent("hooks.start-work", testAgent{}) }},
		{"no namespace", func() { reg.RegisterHook("start-work", testHook{}) }},
		{"upper case", func() { reg.RegisterHook("Hooks.X", testHook{}) }},
		{"nil hook", func() { reg.RegisterHook("hooks.nil", nil) }},
		{"nil agent", func() { reg.RegisterAgent("agents.nil", nil) }},
	}
	for _, tt := range panics {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: registration did not panic", tt.name)
				}
			}()
			tt.f()
		})
	}

	var stdout, stderr bytes.Buffer
	if code := serveBuiltin(reg, "hooks.nope", nil, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), `no built-in plugin "hooks.nope" (have: agents.tapestry, hooks.start-work)`) {
		t.Errorf("serveBuiltin(unknown) = %d, stderr %q; want 2 and the known IDs", code, stderr.String())
	}
	stdout.Reset()
	if code := serveBuiltin(reg, "agents.tapestry", []string{"describe"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), `"role": "tapestry"`) {
		t.Errorf("serveBuiltin(describe) = %d, stdout %q; want 0 and the manifest", code, stdout.String())
	}
}

func TestRPCError(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		want      string
		wantUnavl bool
		wantIs    error
	}{
		{"nil", nil, "", false, nil},
		{"unavailable", status.Error(codes.Unavailable, "error reading from server: EOF"),
			`plugin "p" died or is unavailable during Hook.Handle (error reading from server: EOF)`, true, nil},
		{"plugin error", status.Error(codes.Unknown, "cannot decide"),
			`plugin "p": Hook.Handle: cannot decide`, false, nil},
		{"unimplemented", status.Error(codes.Unimplemented, "unknown service"),
			`plugin "p" does not implement Hook.Handle`, false, nil},
		{"caller cancelled", status.Error(codes.Canceled, "context canceled"),
			`plugin "p": Hook.Handle: context canceled`, false, context.Canceled},
		{"deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"),
			`plugin "p": Hook.Handle: context deadline exceeded`, false, context.DeadlineExceeded},
		{"not a status", errors.New("boom"), `plugin "p": Hook.Handle: boom`, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rpcError("p", "Hook.Handle", tt.err)
			if tt.err == nil {
				if got != nil {
					t.Fatalf("rpcError(nil) = %v, want nil", got)
				}
				return
			}
			if !strings.HasPrefix(got.Error(), tt.want) {
				t.Errorf("rpcError(%v) = %q, want prefix %q", tt.err, got, tt.want)
			}
			if errors.Is(got, plugins.ErrPluginUnavailable) != tt.wantUnavl {
				t.Errorf("rpcError(%v) wraps plugins.ErrPluginUnavailable = %v, want %v", tt.err, !tt.wantUnavl, tt.wantUnavl)
			}
			if tt.wantIs != nil && !errors.Is(got, tt.wantIs) {
				t.Errorf("rpcError(%v) = %v, want it to wrap %v", tt.err, got, tt.wantIs)
			}
		})
	}
}

func TestManifestCheck(t *testing.T) {
	tests := []struct {
		name string
		m    plugins.Manifest
		want string
	}{
		{"ok hook", plugins.Manifest{Info: plugins.Info{Name: "h", Kind: plugins.KindHook, Events: []string{plugins.EventSessionIdle}}, ProtocolVersion: 1}, ""},
		{"ok agent", plugins.Manifest{Info: plugins.Info{Name: "a", Kind: plugins.KindAgent, Role: "loom"}, ProtocolVersion: 1}, ""},
		{"old protocol", plugins.Manifest{Info: plugins.Info{Name: "h", Kind: plugins.KindHook, Events: []string{plugins.EventSessionIdle}}, ProtocolVersion: 0}, "speaks plugin protocol 0"},
		{"no events", plugins.Manifest{Info: plugins.Info{Name: "h", Kind: plugins.KindHook}, ProtocolVersion: 1}, "lists no events"},
		{"no role", plugins.Manifest{Info: plugins.Info{Name: "a", Kind: plugins.KindAgent}, ProtocolVersion: 1}, "has no role"},
		{"bad kind", plugins.Manifest{Info: plugins.Info{Name: "a", Kind: "tool"}, ProtocolVersion: 1}, `unknown kind "tool"`},
		{"no name", plugins.Manifest{Info: plugins.Info{Kind: plugins.KindAgent, Role: "x"}, ProtocolVersion: 1}, "has no name"},
		{"tools", plugins.Manifest{Info: plugins.Info{Name: "h", Kind: plugins.KindHook, Events: []string{plugins.EventToolExecuteBefore},
			Tools: map[string][]string{plugins.EventToolExecuteBefore: {plugins.ToolWrite, plugins.ToolEdit}}}, ProtocolVersion: 1}, ""},
		{"unknown tool", plugins.Manifest{Info: plugins.Info{Name: "h", Kind: plugins.KindHook, Events: []string{plugins.EventToolExecuteBefore},
			Tools: map[string][]string{plugins.EventToolExecuteBefore: {"Write"}}}, ProtocolVersion: 1}, `unknown tool "Write"`},
		{"tools on a toolless event", plugins.Manifest{Info: plugins.Info{Name: "h", Kind: plugins.KindHook, Events: []string{plugins.EventSessionIdle},
			Tools: map[string][]string{plugins.EventSessionIdle: {plugins.ToolBash}}}, ProtocolVersion: 1}, "only tool.execute.before and tool.execute.after carry tools"},
		{"tools on an event not handled", plugins.Manifest{Info: plugins.Info{Name: "h", Kind: plugins.KindHook, Events: []string{plugins.EventToolExecuteBefore},
			Tools: map[string][]string{plugins.EventToolExecuteAfter: {plugins.ToolBash}}}, ProtocolVersion: 1}, "not in Events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkManifest(tt.m)
			if tt.want == "" {
				if err != nil {
					t.Errorf("checkManifest(%+v) = %v, want nil", tt.m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkManifest(%+v) = %v, want %q", tt.m, err, tt.want)
			}
		})
	}
}
