package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBadValues(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		key     string   // the key the error must name
		want    []string // more substrings the error must contain
		notWant string   // a substring the error must not contain
	}{
		{name: "log.level", yaml: "log: {level: loud}", key: "log.level", want: []string{`"loud" is not one of debug, info, warn, error`}},
		{name: "log.format", yaml: "log: {format: xml}", key: "log.format", want: []string{`"xml" is not one of text, json`}},
		{name: "model.provider", yaml: "model: {provider: bedrock}", key: "model.provider", want: []string{"none, openai, anthropic, azure, gemini"}},
		{name: "provider without a model", yaml: "model: {provider: anthropic}", key: "model.provider", want: []string{"set model.name", "WEAVE_MODEL_NAME", "claude-"}},
		{name: "negative max_tokens", yaml: "model: {provider: openai, name: gpt-4.1, max_tokens: -1}", key: "model.max_tokens", want: []string{"want 0 or more"}},
		{name: "bus.backend", yaml: "bus: {backend: redis}", key: "bus.backend", want: []string{"memory, nats"}},
		{name: "bus.default_policy", yaml: "bus: {default_policy: all}", key: "bus.default_policy",
			want: []string{"stopPropagationOnProcessed, stopPropagationOnStop, continueAll"}},
		{name: "bad duration", yaml: "runbook: {block_timeout: 30 minutes}", key: "runbook.block_timeout", want: []string{"Go duration like 30s"}},
		{name: "duration without unit", yaml: "bus: {request_timeout: 30}", key: "bus.request_timeout", want: []string{"Go duration"}},
		{name: "negative duration", yaml: "runbook: {block_timeout: -1m}", key: "runbook.block_timeout", want: []string{"negative"}},
		{name: "zero timeout where one is needed", yaml: "tools: {bash: {timeout: 0s}}", key: "tools.bash.timeout", want: []string{"positive duration"}},
		{name: "no parallel tool calls", yaml: "tools: {max_parallel: 0}", key: "tools.max_parallel", want: []string{"0 is too small; want 1 or more"}},
		{name: "negative retries", yaml: "runbook: {retries: -1}", key: "runbook.retries", want: []string{"want 0 or more"}},
		{name: "zero attempts", yaml: "bus: {max_attempts: 0}", key: "bus.max_attempts", want: []string{"want 1 or more"}},
		{name: "negative queue", yaml: "bus: {queue_size: -5}", key: "bus.queue_size", want: []string{"want 1 or more"}},
		{name: "negative restarts", yaml: "plugin: {max_restarts: -2}", key: "plugin.max_restarts", want: []string{"want 0 or more"}},
		{name: "fractional count", yaml: "delegation: {max_depth: 2.5}", key: "delegation.max_depth", want: []string{"whole number"}},
		{name: "ratio zero", yaml: "context_window: {warn_ratio: 0}", key: "context_window.warn_ratio", want: []string{"outside (0,1]"}},
		{name: "ratio above one", yaml: "context_window: {compact_ratio: 1.5}", key: "context_window.compact_ratio", want: []string{"outside (0,1]"}},
		{name: "warn not below compact", yaml: "context_window: {warn_ratio: 0.96}", key: "context_window.warn_ratio",
			want: []string{"must be below context_window.compact_ratio (0.95, from default)"}},
		{name: "compact lowered under warn", yaml: "context_window: {compact_ratio: 0.5}", key: "context_window.compact_ratio",
			want: []string{"must be above context_window.warn_ratio"}},
		{name: "not a bool", yaml: "work_continuation: {enabled: maybe}", key: "work_continuation.enabled", want: []string{"true or false"}},
		{name: "number for string", yaml: "model: {name: 4}", key: "model.name", want: []string{"want a string"}},
		{name: "bad url", yaml: "bus: {url: not a url}", key: "bus.url", want: []string{"not a URL"}},
		{name: "api key instead of its variable", yaml: "model: {api_key_env: sk-secret-123}", key: "model.api_key_env",
			want: []string{"not an environment variable name"}, notWant: "sk-secret-123"},
		{name: "section as scalar", yaml: "tools: 5", key: "tools", want: []string{"want a mapping with keys bash, webfetch, read"}},
		{name: "unknown agent", yaml: "agents: {lom: {model: x}}", key: "agents.lom", want: []string{"loom, tapestry", `did you mean "loom"`}},
		{name: "unknown tool", yaml: "agents: {thread: {tools: [read, grpe]}}", key: "agents.thread.tools",
			want: []string{`"grpe" is not one of read, write`, `did you mean "grep"`}},
		{name: "temperature out of range", yaml: "categories: {quick: {temperature: 3}}", key: "categories.quick.temperature", want: []string{"[0,2]"}},
		{name: "unknown hook event", yaml: "hooks: {PreToolUs: []}", key: "hooks.PreToolUs",
			want: []string{"Claude Code documents none", `did you mean "PreToolUse"`}},
		{name: "hook type unknown", yaml: "hooks: {Stop: [{hooks: [{type: script, command: x}]}]}", key: "hooks.Stop[0].hooks[0].type",
			want: []string{"want command or http"}},
		{name: "http hook without url", yaml: "hooks: {Stop: [{hooks: [{type: http}]}]}", key: "hooks.Stop[0].hooks[0].url",
			want: []string{"missing"}},
		{name: "http hook with a file url", yaml: "hooks: {Stop: [{hooks: [{type: http, url: 'file:///etc/passwd'}]}]}", key: "hooks.Stop[0].hooks[0].url",
			want: []string{"http:// or https://"}},
		{name: "hook async not a bool", yaml: "hooks: {Stop: [{hooks: [{type: command, command: x, async: yes please}]}]}", key: "hooks.Stop[0].hooks[0].async",
			want: []string{"true or false"}},
		{name: "hook without command", yaml: "hooks: {Stop: [{hooks: [{type: command}]}]}", key: "hooks.Stop[0].hooks[0].command",
			want: []string{"missing"}},
		{name: "hook bad timeout", yaml: "hooks: {Stop: [{hooks: [{type: command, command: x, timeout: -1}]}]}", key: "hooks.Stop[0].hooks[0].timeout",
			want: []string{"positive number of seconds"}},
		{name: "hook bad matcher", yaml: "hooks: {PreToolUse: [{matcher: 'Bash(', hooks: [{type: command, command: x}]}]}", key: "hooks.PreToolUse[0].matcher",
			want: []string{"regular expression"}},
		{name: "plugin without path", yaml: "plugins: [{name: guard}]", key: "plugins[0].path", want: []string{"missing"}},
		{name: "plugin duplicate name", yaml: "plugins: [{name: a, path: /a}, {name: a, path: /b}]", key: "plugins[1].name", want: []string{"unique"}},
		{name: "plugin bad env name", yaml: "plugins: [{name: a, path: /a, env: {'BAD-NAME': x}}]", key: "plugins[0].env", want: []string{"BAD-NAME"}},
		{name: "webfetch allow not a host", yaml: "tools: {webfetch: {allow: [example.com, 'http://10.0.0.1/']}}", key: "tools.webfetch.allow",
			want: []string{`item 1: "http://10.0.0.1/" is not a host name, an IP address or a CIDR`}},
		{name: "webfetch deny bad CIDR", yaml: "tools: {webfetch: {deny: [10.0.0.0/40]}}", key: "tools.webfetch.deny",
			want: []string{`item 0: "10.0.0.0/40" is not a host name`}},
		{name: "plugin args as string", yaml: "plugins: [{name: a, path: /a, args: --x}]", key: "plugins[0].args", want: []string{"list of strings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			path := e.projectFile("config.yaml")
			write(t, path, tt.yaml+"\n")
			c, _, err := Load(e.opts())
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want an error", tt.yaml, c)
			}
			msg := err.Error()
			if prefix := path + ": " + tt.key + ": "; !strings.Contains(msg, prefix) {
				t.Errorf("Load(%s) error = %q, want it to contain %q", tt.yaml, msg, prefix)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Load(%s) error = %q, want it to contain %q", tt.yaml, msg, w)
				}
			}
			if tt.notWant != "" && strings.Contains(msg, tt.notWant) {
				t.Errorf("Load(%s) error = %q, must not contain %q", tt.yaml, msg, tt.notWant)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Layer != LayerProject || fe.Origin != path {
				t.Errorf("Load(%s) error %#v: want a *FieldError from the project file", tt.yaml, fe)
			}
		})
	}
}

func TestErrorMessageExact(t *testing.T) {
	e := newEnv(t)
	path := e.projectFile("config.yaml")
	write(t, path, "log:\n  level: loud\n")
	_, _, err := Load(e.opts())
	want := path + `: log.level: "loud" is not one of debug, info, warn, error`
	if err == nil || err.Error() != want {
		t.Errorf("Load() error = %v, want %q", err, want)
	}
}

func TestAllProblemsReported(t *testing.T) {
	e := newEnv(t)
	write(t, e.userFile("config.yaml"), "log: {level: loud}\n")
	write(t, e.projectFile("config.yaml"), "bus: {queue_size: 0}\nrunbook: {retries: x}\n")
	_, _, err := Load(e.opts())
	if err == nil {
		t.Fatal("Load() = nil error, want three problems")
	}
	for _, want := range []string{
		e.userFile("config.yaml") + ": log.level:",
		e.projectFile("config.yaml") + ": bus.queue_size:",
		e.projectFile("config.yaml") + ": runbook.retries:",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load() error = %q, want it to contain %q", err, want)
		}
	}
}

func TestBadEnvAndFlags(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		flags   map[string]any
		want    string
	}{
		{name: "env enum", environ: []string{"WEAVE_LOG_LEVEL=loud"},
			want: `env WEAVE_LOG_LEVEL: log.level: "loud" is not one of debug, info, warn, error`},
		{name: "env duration", environ: []string{"WEAVE_BUS_REQUEST_TIMEOUT=soon"},
			want: `env WEAVE_BUS_REQUEST_TIMEOUT: bus.request_timeout: want a Go duration`},
		{name: "env count", environ: []string{"WEAVE_BUS_QUEUE_SIZE=-3"},
			want: `env WEAVE_BUS_QUEUE_SIZE: bus.queue_size: -3 is too small`},
		{name: "flag enum", flags: map[string]any{"bus.backend": "kafka"},
			want: `flag bus.backend: bus.backend: "kafka" is not one of memory, nats`},
		{name: "flag unknown key", flags: map[string]any{"log.levle": "debug"},
			want: `flag log.levle: no such setting (did you mean "log.level"?)`},
		{name: "flag on a section", flags: map[string]any{"agents": "x"},
			want: `flag agents: no such setting`},
		{name: "flag ratio order", flags: map[string]any{"context_window.warn_ratio": 0.99},
			want: `flag context_window.warn_ratio: context_window.warn_ratio: 0.99 must be below context_window.compact_ratio (0.95, from default)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			opts := e.opts()
			if tt.environ != nil {
				opts.Environ = tt.environ
			}
			opts.Flags = tt.flags
			_, _, err := Load(opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load() error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"typo in nested key", "log: {levle: debug}", `log.levle: unknown key (did you mean "log.level"?)`},
		{"typo in section", "bsu: {url: ''}", `bsu: unknown key (did you mean "bus"?)`},
		{"key at the wrong level", "level: debug", `level: unknown key (did you mean "log.level"?)`},
		{"typo in agent field", "agents: {loom: {modle: x}}", `agents.loom.modle: unknown key (did you mean "agents.loom.model"?)`},
		{"typo in hook field", "hooks: {Stop: [{hooks: [{type: command, comand: x}]}]}", `hooks.Stop[0].hooks[0].comand: unknown key (did you mean "hooks.Stop[0].hooks[0].command"?)`},
		{"typo in plugin field", "plugins: [{name: a, path: /a, arg: [x]}]", `plugins[0].arg: unknown key (did you mean "plugins[0].args"?)`},
		{"nothing close", "zzzzzzzzzz: 1", `zzzzzzzzzz: unknown key; known here: log, runbook`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			path := e.userFile("config.yaml")
			write(t, path, tt.yaml+"\n")
			_, _, err := Load(e.opts())
			if want := path + ": " + tt.want; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Load(%s) error = %v, want it to contain %q", tt.yaml, err, want)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"level", "format"}
	tests := []struct{ in, want string }{
		{"levle", "level"}, {"Level", "level"}, {"fromat", "format"}, {"colour", ""}, {"", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, known); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestConvert(t *testing.T) {
	tests := []struct {
		kind    Kind
		in      any
		want    any
		problem string // a substring of the problem, "" for none
	}{
		{KindInt, json.Number("30"), 30, ""},
		{KindInt, json.Number("30.0"), 30, ""},
		{KindInt, json.Number("30.5"), nil, "whole number"},
		{KindInt, int32(7), 7, ""},
		{KindInt, int64(8), 8, ""},
		{KindInt, " 9 ", 9, ""},
		{KindInt, true, nil, "got true"},
		{KindFloat, float32(0.5), 0.5, ""},
		{KindFloat, 1, 1.0, ""},
		{KindFloat, json.Number("0.25"), 0.25, ""},
		{KindFloat, "NaN", nil, "want a number"},
		{KindBool, "false", false, ""},
		{KindBool, "1", true, ""},
		{KindBool, 1, nil, "true or false"},
		{KindDuration, "1h30m", 90 * time.Minute, ""},
		{KindDuration, 0, time.Duration(0), ""},
		{KindDuration, int64(0), time.Duration(0), ""},
		{KindDuration, 5, nil, "Go duration"},
		{KindDuration, 2 * time.Second, 2 * time.Second, ""},
		{KindString, "x", "x", ""},
		{KindString, 4, nil, "quote it"},
		{KindStrings, "a, b,,c", []string{"a", "b", "c"}, ""},
		{KindStrings, []any{"a", "b"}, []string{"a", "b"}, ""},
		{KindStrings, []any{"a", 1}, nil, "item 1: want a string"},
		{KindStrings, map[string]any{}, nil, "list of strings"},
	}
	for _, tt := range tests {
		got, problem := convert(tt.kind, tt.in)
		if tt.problem != "" {
			if !strings.Contains(problem, tt.problem) {
				t.Errorf("convert(%s, %#v) problem = %q, want it to contain %q", tt.kind, tt.in, problem, tt.problem)
			}
			continue
		}
		if problem != "" {
			t.Errorf("convert(%s, %#v) problem = %q, want none", tt.kind, tt.in, problem)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("convert(%s, %#v) mismatch (-want +got):\n%s", tt.kind, tt.in, diff)
		}
	}
}
