package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/pluginhost"
)

// The test binary doubles as the plugins (and the small host) these tests
// start: run as TestSupervisorHelperProcess with WEAVE_SUPTEST_HELPER=1 and
// "-- MODE [args]", it becomes what MODE says and never returns.

const supHelperEnv = "WEAVE_SUPTEST_HELPER"

func TestSupervisorHelperProcess(t *testing.T) {
	if os.Getenv(supHelperEnv) != "1" {
		t.Skip("helper process for the supervisor tests")
	}
	i := slices.Index(os.Args, "--")
	if i < 0 || i+1 >= len(os.Args) {
		fmt.Fprintln(os.Stderr, "helper: want -- MODE")
		os.Exit(2)
	}
	mode, rest := os.Args[i+1], os.Args[i+2:]
	// plugins.Serve reads os.Args: give it what a real plugin binary gets.
	if mode != pluginhost.BuiltinCommand {
		os.Args = append([]string{os.Args[0]}, rest...)
	}
	switch mode {
	case "hook":
		plugins.ServeHook(supHook{})
	case "agent":
		plugins.ServeAgent(supAgent{})
	case "garbage":
		fmt.Println("hello, this is not a handshake")
		plugins.ServeHook(supHook{})
	case "bad-stderr":
		fmt.Fprintln(os.Stderr, `{"@message": 5, "@level": 7, "@timestamp": false}`)
		fmt.Fprintln(os.Stderr, `{"@message": "not closed"`)
		plugins.ServeHook(supHook{})
	case "hang-start":
		fmt.Fprintln(os.Stderr, "hanging before the handshake")
		select {}
	case "crash-start":
		fmt.Fprintln(os.Stderr, "loading config")
		fmt.Fprintln(os.Stderr, "fatal: config file /nope is missing")
		os.Exit(3)
	case "host":
		supHelperHost(rest)
	case pluginhost.BuiltinCommand:
		// What `weave __plugin <id>` does, with this binary as weave.
		reg := pluginhost.NewRegistry()
		reg.RegisterHook("hooks.sup-guard", supHook{})
		reg.RegisterAgent("agents.sup-tapestry", supAgent{})
		if len(rest) == 0 {
			fmt.Fprintln(os.Stderr, "helper: want __plugin ID")
			os.Exit(2)
		}
		os.Exit(pluginhost.ServeBuiltin(reg, rest[0], rest[1:]))
	default:
		fmt.Fprintf(os.Stderr, "helper: unknown mode %q\n", mode)
		os.Exit(2)
	}
	os.Exit(0)
}

// supHelperHost runs a supervisor with one hook plugin, starts it, prints
// the plugin's pid and waits to be killed.
func supHelperHost(args []string) {
	s, err := New(Options{}, supEntry("p", "hook"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := s.Hook("p").Info(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(s.Status()[0].PID)
	select {}
}

// supEntry is an entry that runs this test binary as the helper in mode.
func supEntry(name, mode string, args ...string) Entry {
	return Entry{
		Name: name,
		Path: os.Args[0],
		Args: append([]string{"-test.run=^TestSupervisorHelperProcess$", "--", mode}, args...),
		Env:  map[string]string{supHelperEnv: "1"},
	}
}

// supHook is the helper's hook. On tool.execute.before it blocks "rm -rf /",
// hangs on "hang" until cancelled, and reports its environment on "env".
type supHook struct{}

func (supHook) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "sup-hook", Version: "1.0.0", Events: []string{plugins.EventToolExecuteBefore}, Priority: 5}, nil
}

func (supHook) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	cmd, _ := ev.Args["command"].(string)
	switch {
	case cmd == "hang":
		slog.Info("hanging in Handle", "pid", os.Getpid())
		<-ctx.Done()
		return plugins.Decision{}, ctx.Err()
	case cmd == "env":
		b, err := json.Marshal(os.Environ())
		if err != nil {
			return plugins.Decision{}, err
		}
		return plugins.Decision{Action: plugins.Allow, Context: string(b)}, nil
	case cmd == "print":
		fmt.Println("printed to stdout")
		fmt.Fprintln(os.Stderr, "printed to stderr")
		return plugins.Decision{Action: plugins.Allow}, nil
	case cmd == "fail":
		return plugins.Decision{}, errors.New("cannot decide today")
	case strings.Contains(cmd, "rm -rf /"):
		return plugins.Decision{Action: plugins.Block, Reason: "refusing to delete the filesystem"}, nil
	}
	return plugins.Decision{Action: plugins.Allow}, nil
}

// supAgent is the helper's agent: it uses every host service and reports
// what it got back.
type supAgent struct{}

func (supAgent) Info(context.Context) (plugins.Info, error) {
	return plugins.Info{Name: "sup-agent", Version: "0.1.0", Role: "tapestry"}, nil
}

func (supAgent) Handle(ctx context.Context, host plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	var out []string
	res, err := host.CallTool(ctx, plugins.ToolCall{Tool: plugins.ToolBash, Args: map[string]any{"command": req.Prompt}})
	if err != nil {
		return plugins.AgentResponse{}, fmt.Errorf("call tool: %w", err)
	}
	out = append(out, "tool:"+res.Output)
	if err := host.Log(ctx, "info", "ran "+req.Prompt); err != nil {
		return plugins.AgentResponse{}, fmt.Errorf("log: %w", err)
	}
	_, err = host.Complete(ctx, plugins.ChatRequest{Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "hi"}}})
	out = append(out, fmt.Sprintf("model-unconfigured:%v", errors.Is(err, plugins.ErrNoModel)))
	p, err := host.TickTask(ctx, req.Plan, *req.Task)
	if err != nil {
		return plugins.AgentResponse{}, fmt.Errorf("tick: %w", err)
	}
	out = append(out, fmt.Sprintf("progress:%d/%d", p.Done, p.Total))
	return plugins.AgentResponse{Output: strings.Join(out, " "), Done: true}, nil
}

// logSink is a slog.Handler that keeps records and lets a test wait for one.
type logSink struct {
	mu      sync.Mutex
	records []slog.Record
	changed chan struct{}
	attrs   []slog.Attr
	parent  *logSink
}

func newLogSink() *logSink { return &logSink{changed: make(chan struct{})} }

func (s *logSink) root() *logSink {
	if s.parent != nil {
		return s.parent
	}
	return s
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }

func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(s.attrs...)
	root := s.root()
	root.mu.Lock()
	defer root.mu.Unlock()
	root.records = append(root.records, r)
	close(root.changed)
	root.changed = make(chan struct{})
	return nil
}

func (s *logSink) WithAttrs(as []slog.Attr) slog.Handler {
	return &logSink{parent: s.root(), attrs: append(slices.Clone(s.attrs), as...)}
}

func (s *logSink) WithGroup(string) slog.Handler { return s }

// waitFor waits until a record whose message contains msg is logged, and
// returns its attributes.
func (s *logSink) waitFor(t *testing.T, msg string) map[string]string {
	t.Helper()
	root := s.root()
	deadline := time.After(30 * time.Second)
	for {
		root.mu.Lock()
		for _, r := range root.records {
			if strings.Contains(r.Message, msg) {
				attrs := map[string]string{}
				r.Attrs(func(a slog.Attr) bool {
					attrs[a.Key] = a.Value.String()
					return true
				})
				root.mu.Unlock()
				return attrs
			}
		}
		ch := root.changed
		root.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no log record containing %q", msg)
		}
	}
}
