package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/proctest"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/pluginhost"
	"github.com/weavehq/weave/plugins/plugintest"
)

// newTestSupervisor returns a supervisor logging to a sink, closed when the
// test ends.
func newTestSupervisor(t *testing.T, opts Options, entries ...Entry) (*Supervisor, *logSink) {
	t.Helper()
	sink := newLogSink()
	opts.Logger = slog.New(sink)
	if opts.BackoffMin == 0 {
		opts.BackoffMin = time.Millisecond
	}
	s, err := New(opts, entries...)
	if err != nil {
		t.Fatalf("NewSupervisor: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, sink
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func bashEvent(cmd string) plugins.Event {
	return plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: "s1", Tool: plugins.ToolBash,
		Args: map[string]any{"command": cmd}, Time: time.Unix(1700000000, 0).UTC()}
}

func statusOf(t *testing.T, s *Supervisor, name string) Status {
	t.Helper()
	for _, st := range s.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for plugin %q", name)
	return Status{}
}

func TestSupervisorHookLazyStartAndDecisions(t *testing.T) {
	s, sink := newTestSupervisor(t, Options{}, supEntry("guard", "hook"))
	ctx := testCtx(t)
	if st := statusOf(t, s, "guard"); st.Running {
		t.Fatalf("plugin running before first use: %+v", st)
	}
	hook := s.Hook("guard")
	tests := []struct {
		cmd  string
		want plugins.Decision
	}{
		{"rm -rf / --no-preserve-root", plugins.Decision{Action: plugins.Block, Reason: "refusing to delete the filesystem"}},
		{"ls", plugins.Decision{Action: plugins.Allow}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			got, err := hook.Handle(ctx, bashEvent(tt.cmd))
			if err != nil {
				t.Fatalf("Handle(%q): %v", tt.cmd, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Handle(%q) mismatch (-want +got):\n%s", tt.cmd, diff)
			}
		})
	}
	info, err := hook.Info(ctx)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	wantInfo := plugins.Info{Name: "sup-hook", Version: "1.0.0", Kind: plugins.KindHook, Events: []string{plugins.EventToolExecuteBefore}, Priority: 5}
	if diff := cmp.Diff(wantInfo, info); diff != "" {
		t.Errorf("Info mismatch (-want +got):\n%s", diff)
	}
	st := statusOf(t, s, "guard")
	if !st.Running || st.PID == 0 || st.Manifest.ProtocolVersion != plugins.ProtocolVersion {
		t.Errorf("status after use = %+v, want running with a pid and protocol %d", st, plugins.ProtocolVersion)
	}
	if attrs := sink.waitFor(t, "plugin started"); attrs["plugin"] != "guard" {
		t.Errorf("start logged under plugin=%q, want guard", attrs["plugin"])
	}

	// What plugin code prints after the handshake reaches the log too.
	if _, err := hook.Handle(ctx, bashEvent("print")); err != nil {
		t.Fatalf("Handle(print): %v", err)
	}
	for _, msg := range []string{"printed to stdout", "printed to stderr"} {
		if attrs := sink.waitFor(t, msg); attrs["plugin"] != "guard" {
			t.Errorf("%q logged under plugin=%q, want guard", msg, attrs["plugin"])
		}
	}

	_, err = hook.Handle(ctx, bashEvent("fail"))
	if err == nil || !strings.Contains(err.Error(), "cannot decide today") || !strings.Contains(err.Error(), `"guard"`) {
		t.Errorf("Handle(fail) error = %v, want the hook's error naming the plugin", err)
	}
	if errors.Is(err, plugins.ErrPluginUnavailable) {
		t.Errorf("Handle(fail) error %v wraps ErrPluginUnavailable; a hook's own error is not a crash", err)
	}
	if after := statusOf(t, s, "guard"); after.PID != st.PID {
		t.Errorf("pid changed from %d to %d after a hook error; want the same process", st.PID, after.PID)
	}
}

func TestSupervisorPluginKilledMidCall(t *testing.T) {
	s, sink := newTestSupervisor(t, Options{}, supEntry("victim", "hook"))
	ctx := testCtx(t)
	hook := s.Hook("victim")

	errc := make(chan error, 1)
	go func() {
		_, err := hook.Handle(ctx, bashEvent("hang"))
		errc <- err
	}()
	// The plugin's own log line, relayed from its stderr, says it is in the call.
	attrs := sink.waitFor(t, "hanging in Handle")
	if attrs["plugin"] != "victim" {
		t.Errorf("plugin log shown under plugin=%q, want victim", attrs["plugin"])
	}
	pid := statusOf(t, s, "victim").PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill plugin: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, plugins.ErrPluginUnavailable) || !strings.Contains(err.Error(), `plugin "victim" died`) {
			t.Fatalf("in-flight Handle error = %v, want a 'plugin \"victim\" died' error", err)
		}
	case <-ctx.Done():
		t.Fatal("in-flight call did not return after the plugin was killed")
	}

	got, err := hook.Handle(ctx, bashEvent("rm -rf /"))
	if err != nil {
		t.Fatalf("Handle after restart: %v", err)
	}
	if got.Action != plugins.Block {
		t.Errorf("Handle after restart = %+v, want block", got)
	}
	st := statusOf(t, s, "victim")
	if st.PID == pid || st.Restarts != 1 {
		t.Errorf("status after restart = %+v, want a new pid (old %d) and 1 restart", st, pid)
	}
}

func TestSupervisorRestartLimitDisables(t *testing.T) {
	s, _ := newTestSupervisor(t, Options{MaxRestarts: 2}, supEntry("broken", "crash-start"))
	ctx := testCtx(t)
	hook := s.Hook("broken")
	// One start and two restarts fail; the next call finds it disabled.
	for i := range 3 {
		_, err := hook.Info(ctx)
		if err == nil || !strings.Contains(err.Error(), `plugin "broken"`) || !strings.Contains(err.Error(), "failed to start") {
			t.Fatalf("call %d: error = %v, want a start failure naming the plugin", i+1, err)
		}
		if errors.Is(err, ErrDisabled) {
			t.Fatalf("call %d: disabled too early: %v", i+1, err)
		}
	}
	for i := range 2 {
		_, err := hook.Info(ctx)
		if !errors.Is(err, ErrDisabled) {
			t.Fatalf("call %d after the limit: error = %v, want ErrPluginDisabled", i+1, err)
		}
		for _, want := range []string{`plugin "broken"`, "was disabled after 2 restarts", "it exited before completing the plugin handshake", "fatal: config file /nope is missing", "loading config"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("disabled error %q does not contain %q", err, want)
			}
		}
	}
	if st := statusOf(t, s, "broken"); st.Disabled == "" || st.Running {
		t.Errorf("status = %+v, want disabled and not running", st)
	}
}

func TestSupervisorBadOutput(t *testing.T) {
	tests := []struct {
		mode    string
		wantErr string // empty: the plugin works
	}{
		{"garbage", "wrote something other than the plugin handshake to stdout"},
		{"bad-stderr", ""},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			s, _ := newTestSupervisor(t, Options{MaxRestarts: 1}, supEntry("odd", tt.mode))
			ctx := testCtx(t)
			d, err := s.Hook("odd").Handle(ctx, bashEvent("rm -rf /"))
			if tt.wantErr == "" {
				if err != nil || d.Action != plugins.Block {
					t.Fatalf("Handle = %+v, %v; want block", d, err)
				}
				tail := s.plugins["odd"].stderr.Tail()
				if !slices.ContainsFunc(tail, func(l string) bool { return strings.Contains(l, "not closed") }) {
					t.Errorf("stderr tail %q misses the malformed line", tail)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Handle error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestSupervisorStartTimeout(t *testing.T) {
	// Long enough for a race-instrumented helper to start and say why it
	// hangs; a machine too busy for it to say so in time is given a longer
	// one, as the test is about the error, not how soon a helper starts.
	var err error
	var timeout time.Duration
	for _, timeout = range []time.Duration{3 * time.Second, 12 * time.Second, 45 * time.Second} {
		s, _ := newTestSupervisor(t, Options{StartTimeout: timeout}, supEntry("slow", "hang-start"))
		_, err = s.Hook("slow").Info(testCtx(t))
		if err == nil || strings.Contains(err.Error(), "hanging before the handshake") {
			break
		}
	}
	if err == nil {
		t.Fatal("Info on a plugin that never handshakes succeeded")
	}
	for _, want := range []string{`plugin "slow"`, "within " + timeout.String(), "hanging before the handshake"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestSupervisorKindMismatch(t *testing.T) {
	e := supEntry("h", "hook")
	e.Kind = plugins.KindAgent
	s, _ := newTestSupervisor(t, Options{}, e)
	_, err := s.Manifest(testCtx(t), "h")
	if err == nil || !strings.Contains(err.Error(), `is a hook plugin, but its entry says kind "agent"`) {
		t.Fatalf("Manifest error = %v, want a kind mismatch", err)
	}
}

func TestSupervisorExplicitEnvironment(t *testing.T) {
	// The plugin gets the base it is given and nothing else of the host's.
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("SOME_HOST_VAR", "1")
	environ := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=/home/someone",
		"WEAVE_PROJECT=demo",
	}
	e := supEntry("envy", "hook")
	e.Env["EXTRA"] = "from-entry"
	s, _ := newTestSupervisor(t, Options{Environ: environ}, e)
	d, err := s.Hook("envy").Handle(testCtx(t), bashEvent("env"))
	if err != nil {
		t.Fatalf("Handle(env): %v", err)
	}
	var env []string
	if err := json.Unmarshal([]byte(d.Context), &env); err != nil {
		t.Fatalf("decode plugin environment %q: %v", d.Context, err)
	}
	has := func(kv string) bool { return slices.Contains(env, kv) }
	hasKey := func(k string) bool {
		return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
	}
	for _, kv := range []string{"HOME=/home/someone", "WEAVE_PROJECT=demo", "EXTRA=from-entry", plugins.EnvPluginName + "=envy"} {
		if !has(kv) {
			t.Errorf("plugin environment lacks %s: %q", kv, env)
		}
	}
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "WEAVE_API_TOKEN", "SOME_HOST_VAR"} {
		if hasKey(k) {
			t.Errorf("plugin environment has %s: %q", k, env)
		}
	}
}

func TestSupervisorAgentHostServices(t *testing.T) {
	s, sink := newTestSupervisor(t, Options{}, supEntry("tapestry", "agent"))
	host := plugintest.NewFakeHost()
	host.OnTool(plugins.ToolBash, plugins.ToolResult{Output: "built"})
	host.SetPlan(plugins.PlanProgress{Plan: "demo", Total: 2, Tasks: []plugins.PlanTask{{Number: 1, Title: "Build"}, {Number: 2, Title: "Test"}}})
	resp, err := s.Agent("tapestry").Handle(testCtx(t), host, plugins.AgentRequest{
		SessionID: "s1", Prompt: "make", Plan: "demo", Task: &plugins.TaskRef{Number: 1, Title: "Build"},
	})
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	want := plugins.AgentResponse{Output: "tool:built model-unconfigured:true progress:1/2", Done: true}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("Handle mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plugins.ToolCall{{Tool: plugins.ToolBash, Args: map[string]any{"command": "make"}}}, host.ToolCalls()); diff != "" {
		t.Errorf("tool calls mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plugintest.LogLine{{Level: "info", Message: "ran make"}}, host.Logs()); diff != "" {
		t.Errorf("logs mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plugins.TaskRef{{Number: 1, Title: "Build"}}, host.Ticks()); diff != "" {
		t.Errorf("ticks mismatch (-want +got):\n%s", diff)
	}
	if n := len(host.ChatRequests()); n != 1 {
		t.Errorf("model got %d chats, want 1", n)
	}
	if attrs := sink.waitFor(t, "plugin started"); attrs["kind"] != "agent" {
		t.Errorf("started kind = %q, want agent", attrs["kind"])
	}

	// Without a Host the plugin's host calls fail, and the agent says so.
	_, err = s.Agent("tapestry").Handle(testCtx(t), nil, plugins.AgentRequest{Prompt: "x", Task: &plugins.TaskRef{Number: 1}})
	if err == nil || !strings.Contains(err.Error(), "no host services") {
		t.Errorf("Handle with a nil host: error = %v, want 'no host services'", err)
	}
}

func TestSupervisorCloseKillsAllLIFO(t *testing.T) {
	s, sink := newTestSupervisor(t, Options{}, supEntry("first", "hook"), supEntry("second", "hook"))
	ctx := testCtx(t)
	var pids []int
	for _, name := range []string{"first", "second"} {
		if _, err := s.Hook(name).Info(ctx); err != nil {
			t.Fatalf("Info(%s): %v", name, err)
		}
		pids = append(pids, statusOf(t, s, name).PID)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, pid := range pids {
		proctest.WaitGone(t, pid)
	}
	var stopped []string
	sink.mu.Lock()
	for _, r := range sink.records {
		if r.Message == "plugin stopped" {
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "plugin" {
					stopped = append(stopped, a.Value.String())
				}
				return true
			})
		}
	}
	sink.mu.Unlock()
	if diff := cmp.Diff([]string{"second", "first"}, stopped); diff != "" {
		t.Errorf("stop order mismatch (-want +got):\n%s", diff)
	}
	if _, err := s.Hook("first").Info(ctx); !errors.Is(err, errSupervisorClosed) {
		t.Errorf("Info after Close: error = %v, want errSupervisorClosed", err)
	}
}

func TestSupervisorHostSIGKILLLeavesNoPlugin(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signal is Linux only")
	}
	host := exec.Command(os.Args[0], "-test.run=^TestSupervisorHelperProcess$", "--", "host")
	host.Env = append(os.Environ(), supHelperEnv+"=1")
	stdout, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	host.Stderr = &stderr
	if err := host.Start(); err != nil {
		t.Fatalf("start host: %v", err)
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("read plugin pid from host: %v (stderr: %s)", err, stderr.String())
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		t.Fatalf("host printed %q, want the plugin pid", line)
	}
	if proctest.Gone(pid) {
		t.Fatalf("plugin %d not running before the host was killed", pid)
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill host: %v", err)
	}
	_ = host.Wait()
	proctest.WaitGone(t, pid)
}

func TestDescribePlugin(t *testing.T) {
	got, err := Describe(testCtx(t), supEntry("p", "agent"), os.Environ())
	if err != nil {
		t.Fatalf("DescribePlugin: %v", err)
	}
	want := plugins.Manifest{Info: plugins.Info{Name: "sup-agent", Version: "0.1.0", Kind: plugins.KindAgent, Role: "tapestry"}, ProtocolVersion: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DescribePlugin mismatch (-want +got):\n%s", diff)
	}

	_, err = Describe(testCtx(t), supEntry("p", "crash-start"), os.Environ())
	if err == nil || !strings.Contains(err.Error(), `plugin "p"`) {
		t.Errorf("DescribePlugin(crashing plugin) error = %v, want an error naming it", err)
	}
}

func TestDiscoverPlugins(t *testing.T) {
	project, user := t.TempDir(), t.TempDir()
	write := func(path string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	pdir := filepath.Join(project, ".weave", "plugins")
	write(filepath.Join(pdir, "guard"), 0o755)
	write(filepath.Join(pdir, "notes.txt"), 0o644)
	write(filepath.Join(pdir, ".hidden"), 0o755)
	write(filepath.Join(user, "guard"), 0o755)
	write(filepath.Join(user, "lint"), 0o755)
	if err := os.Mkdir(filepath.Join(user, "subdir"), 0o755); err != nil {
		t.Fatal(err)
	}

	got, err := Discover(Dir{pdir, "project"}, Dir{user, "user"})
	if err != nil {
		t.Fatalf("DiscoverPlugins: %v", err)
	}
	want := []Entry{
		{Name: "guard", Path: filepath.Join(pdir, "guard"), Source: "project"},
		{Name: "lint", Path: filepath.Join(user, "lint"), Source: "user"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DiscoverPlugins mismatch (-want +got):\n%s", diff)
	}

	merged := Merge(got, []Entry{{Name: "lint", Path: "/opt/lint", Source: "config"}})
	if merged[1].Path != "/opt/lint" || len(merged) != 2 {
		t.Errorf("MergePluginEntries = %+v, want config's lint to replace the discovered one", merged)
	}

	none, err := Discover(Dir{filepath.Join(t.TempDir(), "plugins"), "project"})
	if err != nil || len(none) != 0 {
		t.Errorf("DiscoverPlugins(empty project) = %v, %v; want nothing, no error", none, err)
	}
}

func TestBuiltinEntry(t *testing.T) {
	e, err := BuiltinEntry("hooks.start-work")
	if err != nil {
		t.Fatalf("BuiltinEntry: %v", err)
	}
	exe, _ := os.Executable()
	want := Entry{Name: "hooks.start-work", Path: exe, Args: []string{"__plugin", "hooks.start-work"}, Source: "builtin"}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("BuiltinEntry mismatch (-want +got):\n%s", diff)
	}
}

func TestSupervisorRejectsBadEntries(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"no name", []Entry{{Path: "/bin/x"}}, "has no name"},
		{"no path", []Entry{{Name: "x"}}, "has no path"},
		{"duplicate", []Entry{{Name: "x", Path: "/a"}, {Name: "x", Path: "/b"}}, "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Options{}, tt.entries...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewSupervisor(%+v) error = %v, want %q", tt.entries, err, tt.want)
			}
		})
	}
	s, _ := newTestSupervisor(t, Options{}, supEntry("a", "hook"))
	if _, err := s.Hook("zzz").Info(testCtx(t)); err == nil || !strings.Contains(err.Error(), `no plugin named "zzz" (have: a)`) {
		t.Errorf("Info(unknown) error = %v, want it to list the plugins", err)
	}
}

func TestSupervisorBuiltinThroughTheSameDoor(t *testing.T) {
	// A built-in entry re-executes the binary with the hidden subcommand;
	// here the test binary stands in for weave.
	builtin := func(id string) Entry {
		e := supEntry(id, pluginhost.BuiltinCommand, id)
		e.Source = "builtin"
		return e
	}
	s, _ := newTestSupervisor(t, Options{MaxRestarts: 1}, builtin("hooks.sup-guard"), builtin("agents.sup-tapestry"), builtin("hooks.missing"))
	ctx := testCtx(t)
	d, err := s.Hook("hooks.sup-guard").Handle(ctx, bashEvent("rm -rf /"))
	if err != nil || d.Action != plugins.Block {
		t.Fatalf("built-in hook Handle = %+v, %v; want block", d, err)
	}
	m, err := s.Manifest(ctx, "agents.sup-tapestry")
	if err != nil || m.Role != "tapestry" || m.Kind != plugins.KindAgent {
		t.Fatalf("built-in agent Manifest = %+v, %v; want the tapestry agent", m, err)
	}
	m, err = Describe(ctx, builtin("hooks.sup-guard"), os.Environ())
	if err != nil || m.Name != "sup-hook" {
		t.Errorf("DescribePlugin(built-in) = %+v, %v; want sup-hook", m, err)
	}
	_, err = s.Hook("hooks.missing").Info(ctx)
	if err == nil || !strings.Contains(err.Error(), `no built-in plugin "hooks.missing" (have: agents.sup-tapestry, hooks.sup-guard)`) {
		t.Errorf("unknown built-in: error = %v, want the known IDs from its stderr", err)
	}
}

func TestHostServicesReachTheAgent(t *testing.T) {
	s, _ := newTestSupervisor(t, Options{}, supEntry("tapestry", "agent"))
	sink := newLogSink()
	var gotCall plugins.ToolCall
	host := &fakeServices{
		logger: slog.New(sink).With("plugin", "tapestry"),
		tool: func(_ context.Context, call plugins.ToolCall) (plugins.ToolResult, error) {
			gotCall = call
			return plugins.ToolResult{Output: "gated"}, nil
		},
		tick: func(_ context.Context, plan string, task plugins.TaskRef) (plugins.PlanProgress, error) {
			return plugins.PlanProgress{Plan: plan, Total: 3, Done: task.Number}, nil
		},
	}
	resp, err := s.Agent("tapestry").Handle(testCtx(t), host, plugins.AgentRequest{Prompt: "go vet", Plan: "p", Task: &plugins.TaskRef{Number: 2}})
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	// No ModelFunc: the agent sees ErrNoModel.
	if want := "tool:gated model-unconfigured:true progress:2/3"; resp.Output != want {
		t.Errorf("Handle output = %q, want %q", resp.Output, want)
	}
	if gotCall.Tool != plugins.ToolBash || gotCall.Args["command"] != "go vet" {
		t.Errorf("tool call = %+v, want bash go vet", gotCall)
	}
	if attrs := sink.waitFor(t, "ran go vet"); attrs["plugin"] != "tapestry" {
		t.Errorf("plugin log attrs = %v, want plugin=tapestry", attrs)
	}

}

func TestSupervisorCallTimeoutIsNotACrash(t *testing.T) {
	s, _ := newTestSupervisor(t, Options{}, supEntry("slowpoke", "hook"))
	hook := s.Hook("slowpoke")
	if _, err := hook.Info(testCtx(t)); err != nil {
		t.Fatalf("Info: %v", err)
	}
	pid := statusOf(t, s, "slowpoke").PID
	ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
	defer cancel()
	_, err := hook.Handle(ctx, bashEvent("hang"))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, plugins.ErrPluginUnavailable) {
		t.Fatalf("Handle(hang) with a deadline: error = %v, want DeadlineExceeded and not unavailable", err)
	}
	if _, err := hook.Handle(testCtx(t), bashEvent("ls")); err != nil {
		t.Fatalf("Handle after a timeout: %v", err)
	}
	if st := statusOf(t, s, "slowpoke"); st.PID != pid || st.Restarts != 0 {
		t.Errorf("status after a timed-out call = %+v, want the same pid %d and no restarts", st, pid)
	}
}

func TestSupervisorConcurrentFirstCallsStartOnce(t *testing.T) {
	s, sink := newTestSupervisor(t, Options{}, supEntry("busy", "hook"))
	ctx := testCtx(t)
	const n = 8
	errc := make(chan error, n)
	for range n {
		go func() {
			d, err := s.Hook("busy").Handle(ctx, bashEvent("rm -rf /"))
			if err == nil && d.Action != plugins.Block {
				err = fmt.Errorf("decision %+v, want block", d)
			}
			errc <- err
		}()
	}
	for range n {
		if err := <-errc; err != nil {
			t.Errorf("concurrent Handle: %v", err)
		}
	}
	started := 0
	sink.mu.Lock()
	for _, r := range sink.records {
		if r.Message == "plugin started" {
			started++
		}
	}
	sink.mu.Unlock()
	if started != 1 {
		t.Errorf("plugin started %d times, want once", started)
	}
}

func TestSupervisorMissingExecutable(t *testing.T) {
	s, _ := newTestSupervisor(t, Options{MaxRestarts: 1}, Entry{Name: "ghost", Path: filepath.Join(t.TempDir(), "nope")})
	_, err := s.Hook("ghost").Info(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), `plugin "ghost"`) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Info(missing executable) error = %v, want one naming the plugin and the missing file", err)
	}
}

func TestSupervisorCloseFailsCallsInFlight(t *testing.T) {
	s, sink := newTestSupervisor(t, Options{}, supEntry("stuck", "hook"))
	ctx := testCtx(t)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Hook("stuck").Handle(ctx, bashEvent("hang"))
		errc <- err
	}()
	sink.waitFor(t, "hanging in Handle")
	pid := statusOf(t, s, "stuck").PID
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, plugins.ErrPluginUnavailable) || !strings.Contains(err.Error(), "shutting down") {
			t.Errorf("in-flight Handle during Close: error = %v, want unavailable while shutting down", err)
		}
	case <-ctx.Done():
		t.Fatal("in-flight call did not return after Close")
	}
	proctest.WaitGone(t, pid)
}

// fakeServices is the host side of an agent call as the supervisor sees it:
// whatever plugins.Host the caller hands over is what the plugin reaches.
type fakeServices struct {
	logger *slog.Logger
	tool   func(context.Context, plugins.ToolCall) (plugins.ToolResult, error)
	tick   func(context.Context, string, plugins.TaskRef) (plugins.PlanProgress, error)
}

func (f *fakeServices) CallTool(ctx context.Context, call plugins.ToolCall) (plugins.ToolResult, error) {
	return f.tool(ctx, call)
}

func (f *fakeServices) Log(ctx context.Context, level, msg string) error {
	f.logger.InfoContext(ctx, msg)
	return nil
}

func (f *fakeServices) Complete(context.Context, plugins.ChatRequest) (plugins.ChatResponse, error) {
	return plugins.ChatResponse{}, plugins.ErrNoModel
}

func (f *fakeServices) Progress(context.Context, string) (plugins.PlanProgress, error) {
	return plugins.PlanProgress{}, errors.New("no plans here")
}

func (f *fakeServices) TickTask(ctx context.Context, plan string, task plugins.TaskRef) (plugins.PlanProgress, error) {
	return f.tick(ctx, plan, task)
}

func TestSupervisorRetriesADisabledPluginWhenItsBinaryChanges(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "plugin.sh")
	script := func(mode string) string {
		return fmt.Sprintf("#!/bin/sh\nexec %q -test.run='^TestSupervisorHelperProcess$' -- %s\n", os.Args[0], mode)
	}
	if err := os.WriteFile(bin, []byte(script("crash-start")), 0o755); err != nil {
		t.Fatal(err)
	}
	s, sink := newTestSupervisor(t, Options{MaxRestarts: 1}, Entry{Name: "fixme", Path: bin, Env: map[string]string{supHelperEnv: "1"}})
	ctx := testCtx(t)
	hook := s.Hook("fixme")
	var err error
	for range 4 {
		if _, err = hook.Info(ctx); errors.Is(err, ErrDisabled) {
			break
		}
	}
	if !errors.Is(err, ErrDisabled) || !strings.Contains(err.Error(), "once its executable changes") {
		t.Fatalf("error after the restarts = %v, want the plugin disabled, saying what re-enables it", err)
	}
	// Untouched, it stays disabled.
	if _, err := hook.Info(ctx); !errors.Is(err, ErrDisabled) {
		t.Fatalf("call with the binary unchanged = %v, want still disabled", err)
	}
	// A fixed build is a new file in its place.
	fixed := bin + ".new"
	if err := os.WriteFile(fixed, []byte(script("hook")), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fixed, bin); err != nil {
		t.Fatal(err)
	}
	info, err := hook.Info(ctx)
	if err != nil {
		t.Fatalf("call after the binary changed = %v, want the plugin started again", err)
	}
	if info.Name != "sup-hook" {
		t.Errorf("info = %+v, want the helper hook", info)
	}
	sink.waitFor(t, "plugin executable changed since it was disabled")
	if st := statusOf(t, s, "fixme"); st.Disabled != "" || !st.Running || st.Restarts != 0 {
		t.Errorf("status = %+v, want running, enabled, restarts reset", st)
	}
}
