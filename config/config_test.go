package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// env is a fixture: a user dir and a project dir under t.TempDir(), with
// an empty environment so nothing of the real machine leaks in.
type env struct {
	user, project string
}

func newEnv(t *testing.T) env {
	t.Helper()
	root := t.TempDir()
	e := env{user: filepath.Join(root, "user", "weave"), project: filepath.Join(root, "proj")}
	for _, d := range []string{e.user, filepath.Join(e.project, ".weave")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e env) opts() Options {
	return Options{ProjectDir: e.project, UserConfigDir: e.user, Environ: []string{}}
}

func (e env) userFile(name string) string    { return filepath.Join(e.user, name) }
func (e env) projectFile(name string) string { return filepath.Join(e.project, ".weave", name) }

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustLoad(t *testing.T, opts Options) (*Config, *Sources) {
	t.Helper()
	c, s, err := Load(opts)
	if err != nil {
		t.Fatalf("Load() error: %v", err)
	}
	return c, s
}

func TestDefaults(t *testing.T) {
	want := &Config{
		Log:              LogConfig{Level: "info", Format: "text", MaxBytes: 10 << 20, Backups: 3, MaxValueBytes: 8 << 10},
		Runbook:          RunbookConfig{Shell: "sh", BlockTimeout: 30 * time.Minute, Retries: 1, OutputTail: 10, MaxLogBytes: 10 << 20},
		WorkContinuation: WorkContinuationConfig{Enabled: false, MaxStaleNudges: 3},
		ContextWindow:    ContextWindowConfig{WarnRatio: 0.80, CompactRatio: 0.95},
		Run:              RunConfig{Workers: 1, Land: "rebase", Finish: "none", Lease: 15 * time.Second},
		Delegation:       DelegationConfig{MaxDepth: 3},
		Instructions:     InstructionsConfig{Files: []string{"AGENTS.md", "CLAUDE.md"}},
		Agents:           map[string]AgentConfig{},
		Categories:       map[string]CategoryConfig{},
		CustomAgents:     map[string]CustomAgentConfig{},
		DisabledAgents:   []string{},
		Model:            ModelConfig{Provider: "none", Timeout: 5 * time.Minute, Azure: AzureConfig{APIVersion: "2024-10-21"}, Fallback: []string{}},
		Models:           map[string]ModelConfig{},
		Plugins:          []PluginConfig{},
		MCPServers:       map[string]MCPServerConfig{},
		Prices:           map[string]PriceConfig{},
		Plugin:           PluginHostConfig{StartTimeout: 10 * time.Second, MaxRestarts: 5, CallTimeout: time.Minute},
		Hooks:            map[string][]HookMatcher{},
		DisabledHooks:    []string{},
		Hook:             HookConfig{Timeout: 10 * time.Second, MaxReasonBytes: 8 << 10, MaxContextBytes: 1 << 20},
		Tools: ToolsConfig{
			MaxParallel: 4,
			Bash:        BashToolConfig{Timeout: 2 * time.Minute, MaxOutputBytes: 1 << 20},
			WebFetch:    WebFetchToolConfig{Enabled: true, Timeout: 30 * time.Second, MaxBytes: 5 << 20, Allow: []string{}, Deny: []string{}},
			Read:        ReadToolConfig{MaxBytes: 1 << 20},
		},
		Sandbox: SandboxConfig{Mode: "auto", Network: "deny", Writable: []string{}},
		Bus: BusConfig{
			Backend: "memory", DefaultPolicy: "stopPropagationOnProcessed", MaxAttempts: 3,
			RequestTimeout: 30 * time.Second, IdempotencyWindow: 10 * time.Minute, QueueSize: 1024, MaxLogMessages: 100000, MaxDeadLetters: 10000,
			MaxFrameBytes: 1 << 20, MaxSubscriptions: 256, MaxInFlight: 64, MaxTotalSubscriptions: 16384, MaxConnections: 1024, MaxSessions: 1000, MaxTopics: 10000, MaxStoreBytes: 256 << 20,
			HTTPBodyTimeout: 30 * time.Second, HTTPIdleTimeout: 2 * time.Minute,
		},
	}
	e := newEnv(t)
	c, s := mustLoad(t, e.opts())
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Load(no files) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, Default()); diff != "" {
		t.Errorf("Default() mismatch (-want +got):\n%s", diff)
	}
	if got := s.Files(); len(got) != 0 {
		t.Errorf("Sources.Files() = %v, want none", got)
	}
}

// TestKeysMatchConfig keeps the table and the struct in step: every scalar
// key has a field of its default's type, and every leaf field has a key.
func TestKeysMatchConfig(t *testing.T) {
	c := Default()
	covered := map[string]bool{}
	for _, k := range Keys() {
		if k.Doc == "" {
			t.Errorf("key %s has no doc line", k.Name)
		}
		if !isScalar(k.Kind) {
			if k.Env != "" || k.Example == "" {
				t.Errorf("section %s: Env = %q, Example empty = %v; want no env and an example", k.Name, k.Env, k.Example == "")
			}
			covered[k.Name] = true
			continue
		}
		if want := envName(k.Name); k.Env != want {
			t.Errorf("key %s: Env = %q, want %q", k.Name, k.Env, want)
		}
		v, err := fieldByKey(c, k.Name)
		if err != nil {
			t.Errorf("fieldByKey(%s): %v", k.Name, err)
			continue
		}
		if got, want := v.Type(), reflect.TypeOf(k.Default); got != want {
			t.Errorf("key %s: field type %v, default type %v", k.Name, got, want)
		}
		covered[k.Name] = true
	}
	sections := map[string]string{"Agents": "agents", "Categories": "categories", "CustomAgents": "custom_agents", "Plugins": "plugins", "Hooks": "hooks", "MCPServers": "mcp_servers", "Permissions": "permissions", "Models": "models", "Prices": "prices"}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := f.Tag.Get("mapstructure")
			if name == "-" {
				name = sections[f.Name]
			}
			full := join(prefix, name)
			if f.Type.Kind() == reflect.Struct && f.Tag.Get("mapstructure") != "-" {
				walk(full, f.Type)
				continue
			}
			if !covered[full] {
				t.Errorf("field %s (%s) has no key in Keys()", f.Name, full)
			}
		}
	}
	walk("", reflect.TypeOf(Config{}))
}

func TestLayersOverride(t *testing.T) {
	tests := []struct {
		name               string
		user, project      string
		environ            []string
		flags              map[string]any
		wantLevel          string
		wantLayer          Layer
		wantOrigin         func(env) string
		wantFormat         string
		wantFormatFromUser bool
	}{
		{name: "default", wantLevel: "info", wantLayer: LayerDefault,
			wantOrigin: func(env) string { return "" }, wantFormat: "text"},
		{name: "user", user: "log: {level: debug, format: json}\n", wantLevel: "debug", wantLayer: LayerUser,
			wantOrigin: func(e env) string { return e.userFile("config.yaml") }, wantFormat: "json", wantFormatFromUser: true},
		{name: "project over user", user: "log: {level: debug, format: json}\n", project: "log:\n  level: warn\n",
			wantLevel: "warn", wantLayer: LayerProject,
			wantOrigin: func(e env) string { return e.projectFile("config.yaml") }, wantFormat: "json", wantFormatFromUser: true},
		{name: "env over project", user: "log: {level: debug, format: json}\n", project: "log:\n  level: warn\n",
			environ:   []string{"WEAVE_LOG_LEVEL=error", "WEAVE_WORKSPACE=/elsewhere"},
			wantLevel: "error", wantLayer: LayerEnv,
			wantOrigin: func(env) string { return "WEAVE_LOG_LEVEL" }, wantFormat: "json", wantFormatFromUser: true},
		{name: "flag over env", user: "log: {level: debug, format: json}\n", project: "log:\n  level: warn\n",
			environ: []string{"WEAVE_LOG_LEVEL=error"}, flags: map[string]any{"log.level": "debug"},
			wantLevel: "debug", wantLayer: LayerFlag,
			wantOrigin: func(env) string { return "log.level" }, wantFormat: "json", wantFormatFromUser: true},
		{name: "empty env value is ignored", project: "log:\n  level: warn\n", environ: []string{"WEAVE_LOG_LEVEL="},
			wantLevel: "warn", wantLayer: LayerProject,
			wantOrigin: func(e env) string { return e.projectFile("config.yaml") }, wantFormat: "text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.user != "" {
				write(t, e.userFile("config.yaml"), tt.user)
			}
			if tt.project != "" {
				write(t, e.projectFile("config.yaml"), tt.project)
			}
			opts := e.opts()
			if tt.environ != nil {
				opts.Environ = tt.environ
			}
			opts.Flags = tt.flags
			c, s := mustLoad(t, opts)
			if c.Log.Level != tt.wantLevel {
				t.Errorf("Log.Level = %q, want %q", c.Log.Level, tt.wantLevel)
			}
			layer, origin := s.Of("log.level")
			if layer != tt.wantLayer || origin != tt.wantOrigin(e) {
				t.Errorf("Of(log.level) = %s, %q, want %s, %q", layer, origin, tt.wantLayer, tt.wantOrigin(e))
			}
			if c.Log.Format != tt.wantFormat {
				t.Errorf("Log.Format = %q, want %q", c.Log.Format, tt.wantFormat)
			}
			wantFL, wantFO := LayerDefault, ""
			if tt.wantFormatFromUser {
				wantFL, wantFO = LayerUser, e.userFile("config.yaml")
			}
			if l, o := s.Of("log.format"); l != wantFL || o != wantFO {
				t.Errorf("Of(log.format) = %s, %q, want %s, %q", l, o, wantFL, wantFO)
			}
			if l, o := s.Of("bus.queue_size"); l != LayerDefault || o != "" {
				t.Errorf("Of(bus.queue_size) = %s, %q, want default", l, o)
			}
		})
	}
}

func TestEnvAndFlagValues(t *testing.T) {
	e := newEnv(t)
	opts := e.opts()
	opts.Environ = []string{
		"WEAVE_DISABLED_HOOKS=keyword-detector, rules-injector",
		"WEAVE_TOOLS_WEBFETCH_ENABLED=false",
		"WEAVE_BUS_URL=ws://127.0.0.1:7777/bus",
		"WEAVE_CONTEXT_WINDOW_WARN_RATIO=0.5",
		"WEAVE_RUNBOOK_RETRIES=4",
		"WEAVE_RUNBOOK_RETRIES=2", // a later entry wins, as in the OS
		"HOME=/nonexistent",
	}
	opts.Flags = map[string]any{
		"runbook.block_timeout":     5 * time.Minute,
		"bus.max_attempts":          "7",
		"work_continuation.enabled": true,
	}
	c, s := mustLoad(t, opts)
	checks := []struct {
		key        string
		got, want  any
		wantLayer  Layer
		wantOrigin string
	}{
		{"disabled_hooks", c.DisabledHooks, []string{"keyword-detector", "rules-injector"}, LayerEnv, "WEAVE_DISABLED_HOOKS"},
		{"tools.webfetch.enabled", c.Tools.WebFetch.Enabled, false, LayerEnv, "WEAVE_TOOLS_WEBFETCH_ENABLED"},
		{"bus.url", c.Bus.URL, "ws://127.0.0.1:7777/bus", LayerEnv, "WEAVE_BUS_URL"},
		{"context_window.warn_ratio", c.ContextWindow.WarnRatio, 0.5, LayerEnv, "WEAVE_CONTEXT_WINDOW_WARN_RATIO"},
		{"runbook.retries", c.Runbook.Retries, 2, LayerEnv, "WEAVE_RUNBOOK_RETRIES"},
		{"runbook.block_timeout", c.Runbook.BlockTimeout, 5 * time.Minute, LayerFlag, "runbook.block_timeout"},
		{"bus.max_attempts", c.Bus.MaxAttempts, 7, LayerFlag, "bus.max_attempts"},
		{"work_continuation.enabled", c.WorkContinuation.Enabled, true, LayerFlag, "work_continuation.enabled"},
	}
	for _, ck := range checks {
		if diff := cmp.Diff(ck.want, ck.got); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", ck.key, diff)
		}
		if l, o := s.Of(ck.key); l != ck.wantLayer || o != ck.wantOrigin {
			t.Errorf("Of(%s) = %s, %q, want %s, %q", ck.key, l, o, ck.wantLayer, ck.wantOrigin)
		}
	}
}

const fullYAML = `log:
  level: debug
runbook:
  block_timeout: 0
tools:
  bash:
    timeout: 90s
agents:
  loom:
    model: gpt-4.1
    temperature: 0.3
  thread:
    tools: [read, grep]
categories:
  quick:
    prompt_append: Be brief.
plugins:
  - name: guard
    path: /opt/guard
    args: [--strict]
    env:
      GUARD_Level: high
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: ./check.sh
          timeout: 5
`

const fullJSON = `{
  "log": {"level": "debug"},
  "runbook": {"block_timeout": "0s"},
  "tools": {"bash": {"timeout": "90s"}},
  "agents": {"loom": {"model": "gpt-4.1", "temperature": 0.3}, "thread": {"tools": ["read", "grep"]}},
  "categories": {"quick": {"prompt_append": "Be brief."}},
  "plugins": [{"name": "guard", "path": "/opt/guard", "args": ["--strict"], "env": {"GUARD_Level": "high"}}],
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5}]}]}
}
`

const fullTOML = `[log]
level = "debug"

[runbook]
block_timeout = "0s"

[tools.bash]
timeout = "90s"

[agents.loom]
model = "gpt-4.1"
temperature = 0.3

[agents.thread]
tools = ["read", "grep"]

[categories.quick]
prompt_append = "Be brief."

[[plugins]]
name = "guard"
path = "/opt/guard"
args = ["--strict"]
env = { GUARD_Level = "high" }

[[hooks.PreToolUse]]
matcher = "Bash"
hooks = [{ type = "command", command = "./check.sh", timeout = 5 }]
`

func TestFormats(t *testing.T) {
	temp := 0.3
	want := Default()
	want.Log.Level = "debug"
	want.Runbook.BlockTimeout = 0
	want.Tools.Bash.Timeout = 90 * time.Second
	want.Agents = map[string]AgentConfig{"loom": {Model: "gpt-4.1", Temperature: &temp}, "thread": {Tools: []string{"read", "grep"}}}
	want.Categories = map[string]CategoryConfig{"quick": {PromptAppend: "Be brief."}}
	want.Plugins = []PluginConfig{{Name: "guard", Path: "/opt/guard", Args: []string{"--strict"}, Env: map[string]string{"GUARD_Level": "high"}}}
	want.Hooks = map[string][]HookMatcher{"PreToolUse": {{Matcher: "Bash", Hooks: []CommandHook{{Type: "command", Command: "./check.sh", Timeout: 5}}}}}

	for _, tt := range []struct{ file, content string }{
		{"config.yaml", fullYAML}, {"config.yml", fullYAML}, {"config.json", fullJSON}, {"config.toml", fullTOML},
	} {
		t.Run(tt.file, func(t *testing.T) {
			e := newEnv(t)
			path := e.projectFile(tt.file)
			write(t, path, tt.content)
			c, s := mustLoad(t, e.opts())
			if diff := cmp.Diff(want, c); diff != "" {
				t.Errorf("Load(%s) mismatch (-want +got):\n%s", tt.file, diff)
			}
			for _, key := range []string{"log.level", "tools.bash.timeout", "agents.loom.model", "plugins[0].env.GUARD_Level", "hooks.PreToolUse[0].hooks[0].command"} {
				if l, o := s.Of(key); l != LayerProject || o != path {
					t.Errorf("Of(%s) = %s, %q, want project, %q", key, l, o, path)
				}
			}
			if diff := cmp.Diff([]string{path}, s.Files()); diff != "" {
				t.Errorf("Files() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTwoFormatsInOneDir(t *testing.T) {
	e := newEnv(t)
	write(t, e.projectFile("config.yaml"), "log: {level: debug}\n")
	write(t, e.projectFile("config.json"), `{"log": {"level": "warn"}}`)
	_, _, err := Load(e.opts())
	if err == nil {
		t.Fatal("Load() with config.yaml and config.json: no error")
	}
	for _, want := range []string{e.projectFile("config.yaml"), e.projectFile("config.json"), "keep one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load() error = %q, want it to contain %q", err, want)
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, tt := range []struct{ file, content string }{
		{"config.yaml", "log:\n  level: [debug\n"},
		{"config.yaml", "- just\n- a list\n"},
		{"config.json", `{"log": {"level": "debug"}} trailing`},
		{"config.toml", "[log\nlevel = 1\n"},
	} {
		t.Run(tt.file+" "+strings.Fields(tt.content)[0], func(t *testing.T) {
			e := newEnv(t)
			write(t, e.projectFile(tt.file), tt.content)
			c, _, err := Load(e.opts())
			if err == nil {
				t.Fatalf("Load(%q) = %+v, want an error", tt.content, c)
			}
			if !strings.Contains(err.Error(), e.projectFile(tt.file)) {
				t.Errorf("Load(%q) error = %q, want it to name the file", tt.content, err)
			}
		})
	}
}

func mkdir(d string) error { return os.MkdirAll(d, 0o755) }

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

func TestPricesAndBudget(t *testing.T) {
	e := newEnv(t)
	write(t, e.projectFile("config.yaml"), "prices:\n  my-model:\n    input: 1.5\n    output: 6\n  gpt-4.1:\n    output: 9\nbudget:\n  run: 5\n  task: 0.5\n")
	c, _ := mustLoad(t, e.opts())
	p := c.Prices["my-model"]
	if p.Input == nil || *p.Input != 1.5 || p.Output == nil || *p.Output != 6 || p.CacheRead != nil {
		t.Errorf("prices.my-model = %+v, want input 1.5, output 6, no cache prices", p)
	}
	if o := c.Prices["gpt-4.1"]; o.Input != nil || o.Output == nil || *o.Output != 9 {
		t.Errorf("prices.gpt-4.1 = %+v, want output 9 only", o)
	}
	if c.Budget != (BudgetConfig{Run: 5, Task: 0.5}) {
		t.Errorf("budget = %+v, want run 5, task 0.5", c.Budget)
	}
	write(t, e.projectFile("config.yaml"), "prices:\n  m:\n    input: -1\n    outptu: 2\nbudget:\n  run: -3\n")
	_, _, err := Load(e.opts())
	for _, want := range []string{"prices.m.input", "prices.m.outptu", "budget.run"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(bad prices and budget) = %v, want an error naming %s", err, want)
		}
	}
}
