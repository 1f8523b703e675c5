package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// claudeSettings is the hooks object of a Claude Code settings.json as
// people have it, pasted unchanged.
const claudeSettings = `{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "jq -r '\"\\(.tool_input.command) - \\(.tool_input.description // \"No description\")\"' >> ~/.claude/bash-command-log.txt"
          }
        ]
      }
    ],
    "PostToolUse": [
      {
        "matcher": "Edit|MultiEdit|Write",
        "hooks": [
          {
            "type": "command",
            "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check-style.sh",
            "timeout": 30
          }
        ]
      }
    ],
    "UserPromptSubmit": [
      {
        "hooks": [
          { "type": "command", "command": "/usr/local/bin/prompt-guard.py" }
        ]
      }
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          { "type": "command", "command": "cat .claude/context.md" }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          { "type": "command", "command": "notify-send 'Claude is done'", "timeout": 10 },
          { "type": "command", "command": "./scripts/stop-gate.sh" }
        ]
      }
    ]
  }
}
`

func claudeWant() map[string][]HookMatcher {
	return map[string][]HookMatcher{
		"PreToolUse": {{Matcher: "Bash", Hooks: []CommandHook{{Type: "command",
			Command: `jq -r '"\(.tool_input.command) - \(.tool_input.description // "No description")"' >> ~/.claude/bash-command-log.txt`, Timeout: 60}}}},
		"PostToolUse": {{Matcher: "Edit|MultiEdit|Write", Hooks: []CommandHook{{Type: "command",
			Command: `"$CLAUDE_PROJECT_DIR"/.claude/hooks/check-style.sh`, Timeout: 30}}}},
		"UserPromptSubmit": {{Hooks: []CommandHook{{Type: "command", Command: "/usr/local/bin/prompt-guard.py", Timeout: 60}}}},
		"SessionStart":     {{Matcher: "startup", Hooks: []CommandHook{{Type: "command", Command: "cat .claude/context.md", Timeout: 60}}}},
		"Stop": {{Hooks: []CommandHook{
			{Type: "command", Command: "notify-send 'Claude is done'", Timeout: 10},
			{Type: "command", Command: "./scripts/stop-gate.sh", Timeout: 60},
		}}},
	}
}

func TestClaudeHooksPasted(t *testing.T) {
	e := newEnv(t)
	write(t, e.projectFile("config.json"), claudeSettings)
	c, _ := mustLoad(t, e.opts())
	if diff := cmp.Diff(claudeWant(), c.Hooks); diff != "" {
		t.Errorf("Hooks mismatch (-want +got):\n%s", diff)
	}
	if got := c.Hooks["PostToolUse"][0].Hooks[0].TimeoutDuration().String(); got != "30s" {
		t.Errorf("TimeoutDuration() = %s, want 30s", got)
	}

	// The same hooks rendered as YAML load back the same: the YAML shape is
	// the JSON shape.
	var buf bytes.Buffer
	if err := Render(&buf, c, nil, false); err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(t)
	write(t, e2.projectFile("config.yaml"), buf.String())
	c2, _ := mustLoad(t, e2.opts())
	if diff := cmp.Diff(claudeWant(), c2.Hooks); diff != "" {
		t.Errorf("Hooks after YAML round trip mismatch (-want +got):\n%s\nYAML:\n%s", diff, buf.String())
	}
}

func TestSectionsMergeAcrossLayers(t *testing.T) {
	e := newEnv(t)
	user, project := e.userFile("config.yaml"), e.projectFile("config.toml")
	write(t, user, `agents:
  loom:
    model: gpt-4.1
    prompt_append: from user
  weft: {}
categories:
  quick: {model: small}
plugins:
  - {name: guard, path: /user/guard}
  - {name: lint, path: /user/lint}
hooks:
  PreToolUse:
    - matcher: Bash
      hooks: [{type: command, command: user-check}]
`)
	write(t, project, `[agents.loom]
temperature = 0.1
prompt_append = "from project"

[[plugins]]
name = "guard"
path = "/project/guard"

[[plugins]]
name = "extra"
path = "/project/extra"

[[hooks.PreToolUse]]
matcher = "Write"
hooks = [{ type = "command", command = "project-check" }]
`)
	c, s := mustLoad(t, e.opts())
	temp := 0.1
	wantAgents := map[string]AgentConfig{
		"loom": {Model: "gpt-4.1", Temperature: &temp, PromptAppend: "from project"},
		"weft": {},
	}
	if diff := cmp.Diff(wantAgents, c.Agents); diff != "" {
		t.Errorf("Agents mismatch (-want +got):\n%s", diff)
	}
	wantPlugins := []PluginConfig{{Name: "guard", Path: "/project/guard"}, {Name: "lint", Path: "/user/lint"}, {Name: "extra", Path: "/project/extra"}}
	if diff := cmp.Diff(wantPlugins, c.Plugins); diff != "" {
		t.Errorf("Plugins mismatch (-want +got):\n%s", diff)
	}
	wantHooks := []HookMatcher{
		{Matcher: "Bash", Hooks: []CommandHook{{Type: "command", Command: "user-check", Timeout: 60}}},
		{Matcher: "Write", Hooks: []CommandHook{{Type: "command", Command: "project-check", Timeout: 60}}},
	}
	if diff := cmp.Diff(wantHooks, c.Hooks["PreToolUse"]); diff != "" {
		t.Errorf("Hooks[PreToolUse] mismatch (-want +got):\n%s", diff)
	}

	sources := []struct {
		key        string
		wantLayer  Layer
		wantOrigin string
	}{
		{"agents.loom.model", LayerUser, user},
		{"agents.loom.temperature", LayerProject, project},
		{"agents.loom.prompt_append", LayerProject, project},
		{"agents.loom", LayerProject, project}, // a section reports its highest layer
		{"agents.weft", LayerUser, user},
		{"categories.quick.model", LayerUser, user},
		{"plugins[0].path", LayerProject, project},
		{"plugins[1].name", LayerUser, user},
		{"plugins[2]", LayerProject, project},
		{"hooks.PreToolUse[0].hooks[0].command", LayerUser, user},
		{"hooks.PreToolUse[1].matcher", LayerProject, project},
		{"agents.tapestry.model", LayerDefault, ""},
		{"log.level", LayerDefault, ""},
	}
	for _, tt := range sources {
		if l, o := s.Of(tt.key); l != tt.wantLayer || o != tt.wantOrigin {
			t.Errorf("Of(%s) = %s, %q, want %s, %q", tt.key, l, o, tt.wantLayer, tt.wantOrigin)
		}
	}
	if diff := cmp.Diff([]string{user, project}, s.Files()); diff != "" {
		t.Errorf("Files() mismatch (-want +got):\n%s", diff)
	}
}

func TestDefaultYAMLRoundTrip(t *testing.T) {
	e := newEnv(t)
	path := e.projectFile("config.yaml")
	write(t, path, string(DefaultYAML()))
	c, s := mustLoad(t, e.opts())
	if diff := cmp.Diff(Default(), c); diff != "" {
		t.Errorf("Load(DefaultYAML()) mismatch (-want +got):\n%s", diff)
	}
	text := string(DefaultYAML())
	for _, k := range Keys() {
		if !isScalar(k.Kind) {
			if !strings.Contains(text, "\n# "+k.Name+": ") {
				t.Errorf("DefaultYAML() lacks section %s", k.Name)
			}
			continue
		}
		// The defaults are comments: the file sets nothing.
		if l, o := s.Of(k.Name); l != LayerDefault {
			t.Errorf("Of(%s) = %s, %q; DefaultYAML() sets the key, want it only commented", k.Name, l, o)
		}
		parts := strings.Split(k.Name, ".")
		if !strings.Contains(text, "# "+strings.Repeat("  ", len(parts)-1)+parts[len(parts)-1]+": ") {
			t.Errorf("DefaultYAML() lacks the commented key %s", k.Name)
		}
		if !strings.Contains(text, k.Doc[:min(len(k.Doc), 20)]) {
			t.Errorf("DefaultYAML() lacks the doc of %s", k.Name)
		}
	}
	// Uncommenting a key and its section sets it.
	one := strings.Replace(strings.Replace(text, "\n# runbook:\n", "\nrunbook:\n", 1), "\n#   retries: 1\n", "\n  retries: 4\n", 1)
	write(t, path, one)
	c, _ = mustLoad(t, e.opts())
	if c.Runbook.Retries != 4 {
		t.Errorf("uncommented runbook.retries: 4 loads as %d", c.Runbook.Retries)
	}
}

func TestRenderSources(t *testing.T) {
	e := newEnv(t)
	project := e.projectFile("config.yaml")
	write(t, project, "log: {level: debug}\nagents: {loom: {model: m1}}\nbus: {token: s3cret}\n")
	opts := e.opts()
	opts.Environ = []string{"WEAVE_BUS_URL=ws://127.0.0.1:9/bus"}
	opts.Flags = map[string]any{"runbook.retries": 4}
	c, s := mustLoad(t, opts)
	var buf bytes.Buffer
	if err := Render(&buf, c, s, true); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"  level: debug # project: " + project + "\n",
		"  format: text # default\n",
		"  retries: 4 # flag: runbook.retries\n",
		"  url: ws://127.0.0.1:9/bus # env: WEAVE_BUS_URL\n",
		"    model: m1 # project: " + project + "\n",
		"  token: <redacted> # project: " + project + "\n",
		"plugins: [] # default\n",
		"  block_timeout: 30m # default\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Render(withSources) lacks %q; got:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("Render() shows the bus token:\n%s", out)
	}
	buf.Reset()
	if err := Render(&buf, c, s, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "#") {
		t.Errorf("Render(without sources) has comments:\n%s", buf.String())
	}
}

// TestRenderRoundTrip: what `weave config show` prints is a valid config
// file that loads back to the same config.
func TestRenderRoundTrip(t *testing.T) {
	e := newEnv(t)
	write(t, e.projectFile("config.yaml"), fullYAML+"disabled_hooks: [a, b]\nmodel: {provider: openai, name: gpt-4.1, max_tokens: 4096, base_url: 'https://api.example.com/v1', api_key_env: OPENAI_API_KEY}\n")
	write(t, e.userFile("config.json"), claudeSettings)
	c, _ := mustLoad(t, e.opts())
	var buf bytes.Buffer
	if err := Render(&buf, c, nil, false); err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(t)
	write(t, e2.projectFile("config.yaml"), buf.String())
	c2, _ := mustLoad(t, e2.opts())
	if diff := cmp.Diff(c, c2); diff != "" {
		t.Errorf("Load(Render(c)) mismatch (-want +got):\n%s\nYAML:\n%s", diff, buf.String())
	}
}

func TestUserDir(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"explicit", Options{UserConfigDir: "/u/w", Environ: []string{"XDG_CONFIG_HOME=/x"}}, "/u/w"},
		{"xdg", Options{Environ: []string{"XDG_CONFIG_HOME=/x", "HOME=/h"}}, "/x/weave"},
		{"relative xdg is ignored", Options{Environ: []string{"XDG_CONFIG_HOME=rel", "HOME=/h"}}, "/h/.config/weave"},
		{"home", Options{Environ: []string{"HOME=/h"}}, "/h/.config/weave"},
		{"nothing", Options{Environ: []string{}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.opts.UserDir(); got != tt.want {
				t.Errorf("UserDir() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUserDirFromEnviron(t *testing.T) {
	e := newEnv(t)
	xdg := t.TempDir()
	if err := os.MkdirAll(xdg+"/weave", 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, xdg+"/weave/config.yaml", "log: {level: warn}\n")
	c, s := mustLoad(t, Options{ProjectDir: e.project, Environ: []string{"XDG_CONFIG_HOME=" + xdg}})
	if c.Log.Level != "warn" {
		t.Errorf("Log.Level = %q, want warn from $XDG_CONFIG_HOME/weave/config.yaml", c.Log.Level)
	}
	if l, o := s.Of("log.level"); l != LayerUser || o != xdg+"/weave/config.yaml" {
		t.Errorf("Of(log.level) = %s, %q, want user, %q", l, o, xdg+"/weave/config.yaml")
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"0s", "0s"}, {"30m", "30m"}, {"1h", "1h"}, {"1h30m", "1h30m"}, {"90s", "1m30s"}, {"1500ms", "1.5s"}, {"2h0m5s", "2h0m5s"},
	}
	for _, tt := range tests {
		d := mustDuration(t, tt.in)
		if got := formatDuration(d); got != tt.want {
			t.Errorf("formatDuration(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestInstructionsAndCategorySkills(t *testing.T) {
	e := newEnv(t)
	write(t, e.projectFile("config.yaml"), `instructions:
  files: [CLAUDE.md, AGENTS.md]
categories:
  frontend:
    skills: [css-rules, react]
`)
	c, _ := mustLoad(t, e.opts())
	if diff := cmp.Diff([]string{"CLAUDE.md", "AGENTS.md"}, c.Instructions.Files); diff != "" {
		t.Errorf("instructions.files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"css-rules", "react"}, c.Categories["frontend"].Skills); diff != "" {
		t.Errorf("categories.frontend.skills (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"instructions:\n  files: [docs/AGENTS.md]\n", "instructions:\n  files: [..]\n", "categories:\n  frontend:\n    skills: {a: b}\n"} {
		e := newEnv(t)
		write(t, e.projectFile("config.yaml"), bad)
		if _, _, err := Load(e.opts()); err == nil {
			t.Errorf("Load(%q) accepted it", bad)
		}
	}
}
