package config

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weavehq/weave/internal/netpolicy"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/plugins"
)

// Kind is the type of a key's value as written in a file.
type Kind string

// The kinds of Key. Map and List are the sections keyed by user-chosen names
// (agents, categories, hooks) or holding entries (plugins); they have no
// per-key defaults and cannot be set from the environment or flags.
const (
	KindString   Kind = "string"
	KindInt      Kind = "int"
	KindFloat    Kind = "float"
	KindBool     Kind = "bool"
	KindDuration Kind = "duration" // a Go duration string: 30s, 5m, 1h30m
	KindStrings  Kind = "[]string" // a list; from the environment, comma-separated
	KindMap      Kind = "map"
	KindList     Kind = "list"
)

// Key describes one configuration key. Keys() is the single table that
// loading, validation, rendering and DefaultYAML are built from.
type Key struct {
	Name    string   // dotted path, e.g. "log.level"
	Kind    Kind     // the value's type
	Default any      // the typed default (string, int, float64, bool, time.Duration, []string, or the empty section)
	Doc     string   // one line for humans
	Allowed []string // enumerated values; for agents and hooks, the allowed names
	Env     string   // the WEAVE_* variable that sets it; "" for map and list sections
	Secret  bool     // rendered redacted by Render
	// CredentialURL says the value is a URL that may carry credentials:
	// Render shows it with its user info redacted.
	CredentialURL bool
	Example       string // for map and list sections: a YAML example, shown commented in DefaultYAML

	check func(v any) string // a problem with a converted value, or ""
}

// Agent names that may appear under agents:. They are the agents package's
// roles (agents.RoleNames), which config may not import; a test in host
// fails when the two disagree.
var agentNames = []string{"loom", "tapestry", "pattern", "thread", "spindle", "weft", "warp", "shuttle"}

// modelProviders are the values model.provider accepts besides none, with
// what config's messages say about each. They are the rows of host/model's
// provider table (model.Names), which config may not import; a test in
// host/model fails when the two disagree.
var modelProviders = []struct {
	name, keyEnv, example string
	// effort and thinking say whether the provider takes
	// reasoning_effort and thinking_budget.
	effort, thinking bool
}{
	{name: "openai", keyEnv: "OPENAI_API_KEY", example: "gpt-4.1 (or qwen3 on Ollama)", effort: true},
	{name: "anthropic", keyEnv: "ANTHROPIC_API_KEY", example: "claude-sonnet-4-5", thinking: true},
	{name: "azure", keyEnv: "AZURE_OPENAI_API_KEY", example: "gpt-4.1 (your deployment's model)", effort: true},
	{name: "gemini", keyEnv: "GEMINI_API_KEY", example: "gemini-2.5-flash", effort: true, thinking: true},
}

// ProviderCapabilities says, for the provider table's drift test, which
// providers config lets take reasoning_effort and thinking_budget.
func ProviderCapabilities() map[string][2]bool {
	out := map[string][2]bool{}
	for _, p := range modelProviders {
		out[p.name] = [2]bool{p.effort, p.thinking}
	}
	return out
}

// providerValues are model.provider's accepted values: none, then the
// providers.
func providerValues() []string {
	out := []string{"none"}
	for _, p := range modelProviders {
		out = append(out, p.name)
	}
	return out
}

// providerKeyEnvs names the providers' default key variables for a doc
// line: "OPENAI_API_KEY or ANTHROPIC_API_KEY or ...".
func providerKeyEnvs() string {
	envs := make([]string, 0, len(modelProviders))
	for _, p := range modelProviders {
		envs = append(envs, p.keyEnv)
	}
	return strings.Join(envs, " or ")
}

// exampleModel is a model the provider serves, for messages.
func exampleModel(provider string) string {
	for _, p := range modelProviders {
		if p.name == provider {
			return p.example
		}
	}
	return modelProviders[0].example
}

// Tool names an agent's tools list may narrow to: the host's table of tools.
var toolNames = plugins.ToolNames()

// Claude Code hook event names accepted under hooks:, in the order of its
// reference; package hooks takes them from here (hooks.ClaudeEventNames) and
// says which of them Weave fires.
var hookEvents = []string{
	"SessionStart", "Setup", "UserPromptSubmit", "UserPromptExpansion",
	"PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse",
	"PostToolUseFailure", "PostToolBatch", "Notification", "SubagentStart",
	"SubagentStop", "TaskCreated", "TaskCompleted", "TeammateIdle", "Stop",
	"StopFailure", "InstructionsLoaded", "ConfigChange", "CwdChanged",
	"FileChanged", "WorktreeCreate", "WorktreeRemove", "PreCompact",
	"PostCompact", "Elicitation", "ElicitationResult", "PreModelSwitch",
	"PostModelSwitch", "MessageDisplay", "DirectoryAdded", "SessionEnd",
}

// hookTypes are the hook types accepted under hooks: (hooks.ClaudeHookTypes).
var hookTypes = []string{"command", "http", "prompt", "agent", "mcp_tool"}

// AgentNames are the names config accepts under agents:.
func AgentNames() []string { return slices.Clone(agentNames) }

// HookEvents are the Claude Code event names config accepts under hooks:.
func HookEvents() []string { return slices.Clone(hookEvents) }

// HookTypes are the hook types config accepts under hooks:.
func HookTypes() []string { return slices.Clone(hookTypes) }

const mib = 1 << 20

// Keys returns the table of every configuration key, in the order they are
// rendered. The slice is a fresh copy; callers may modify it.
func Keys() []Key {
	keys := keyTable()
	for i := range keys {
		if keys[i].Kind != KindMap && keys[i].Kind != KindList {
			keys[i].Env = envName(keys[i].Name)
		}
	}
	return keys
}

func keyTable() []Key {
	return []Key{
		{Name: "log.level", Kind: KindString, Default: "info", Allowed: []string{"debug", "info", "warn", "error"},
			Doc: "Log verbosity."},
		{Name: "log.format", Kind: KindString, Default: "text", Allowed: []string{"text", "json"},
			Doc: "Log line format."},
		{Name: "log.max_bytes", Kind: KindInt, Default: 10 * mib, check: minInt(64 << 10),
			Doc: "Size at which .weave/logs/weave.log rotates, in bytes (at least 64 KiB)."},
		{Name: "log.backups", Kind: KindInt, Default: 3, check: intBetween(1, 100),
			Doc: "Rotated host logs kept (weave.log.1, ...), 1 to 100."},
		{Name: "log.max_value_bytes", Kind: KindInt, Default: 8 << 10, check: minInt(256),
			Doc: "Longest message or value of one host log record, in bytes; the rest is cut (at least 256)."},

		{Name: "runbook.shell", Kind: KindString, Default: "sh", check: shellName,
			Doc: "Shell that runs a task's sh blocks (sh, bash, zsh, dash... or a path); bash blocks always run under bash."},
		{Name: "runbook.block_timeout", Kind: KindDuration, Default: 30 * time.Minute, check: minDuration(0),
			Doc: "Longest one shell block may run; 0 means no limit."},
		{Name: "runbook.retries", Kind: KindInt, Default: 1, check: intBetween(0, MaxRetries),
			Doc: "Retries of a failing task before the plan pauses, at most 10; the attempts are spaced by a backoff from 250ms doubling to 10s."},
		{Name: "runbook.output_tail", Kind: KindInt, Default: 10, check: minInt(0),
			Doc: "Lines of a running task's output shown live."},
		{Name: "runbook.max_log_bytes", Kind: KindInt, Default: 10 * mib, check: minInt(64 << 10),
			Doc: "Size at which a task's log under .weave/logs/<plan>/ rotates, in bytes (one older file is kept; at least 64 KiB)."},

		{Name: "run.workers", Kind: KindInt, Default: 1, check: intBetween(1, MaxWorkers),
			Doc: "Tasks of a plan that run at once (start-work --workers), 1 to 64; above 1 each task runs in a git worktree of its own under .weave/worktrees/ and lands on the branch weave/<plan> only after its verify blocks pass there; 1 runs them one after another in the project."},
		{Name: "run.infer_deps", Kind: KindBool, Default: false,
			Doc: "In a plan that names no dependency, treat tasks whose **Files** lists are disjoint as independent, so that workers may run them at once (start-work --infer-deps)."},
		{Name: "run.land", Kind: KindString, Default: "rebase", Allowed: []string{"rebase", "merge"},
			Doc: "How a worker's finished task lands on weave/<plan>: rebase (its commit replayed on top, one commit per task) or merge (a merge commit)."},
		{Name: "run.finish", Kind: KindString, Default: "none", Allowed: []string{"none", "ff"},
			Doc: "When a run with workers finishes its plan: none (say how to merge weave/<plan>) or ff (fast-forward the branch the run started from, when its tree has no changes in the way)."},
		{Name: "run.remote", Kind: KindString, Default: "", check: remoteName,
			Doc: "A git remote of the project (origin) that carries a run's code to and from the workers of a run coordinated over NATS (start-work --bus nats://...), instead of bundles in JetStream: the integration head is pushed to refs/weave/base/<commit> there, each worker (weave worker --remote URL) pushes its task's commit to refs/weave/results/...; empty keeps the bundles. Its URL must hold no password or token."},

		{Name: "run.lease", Kind: KindDuration, Default: 15 * time.Second, check: minDuration(time.Second),
			Doc: "In a run coordinated over NATS (start-work --bus nats://), how long a worker may stay silent before its task is taken back and offered again; workers send a heartbeat every third of it (at least 1s)."},

		{Name: "work_continuation.enabled", Kind: KindBool, Default: false,
			Doc: "Re-prompt the executing agent when it goes idle with tasks left, in every session; `weave start-work` always does."},
		{Name: "work_continuation.max_stale_nudges", Kind: KindInt, Default: 3, check: minInt(1),
			Doc: "Nudges without progress before the plan pauses."},

		{Name: "instructions.files", Kind: KindStrings, Default: []string{"AGENTS.md", "CLAUDE.md"}, check: fileNames,
			Doc: "Instruction file names looked for in a directory, the first found winning: the project root's and the user's ($XDG_CONFIG_HOME/weave/) are in every agent's first request; a subfolder's is added when an agent first reads or changes a file under it."},
		{Name: "loop.jwz", Kind: KindBool, Default: false,
			Doc: "Also append a run's loop events (STATE, DONE, ABORT on loop:current, ANCHOR on loop:anchor) to the project's jwz store, .jwz/messages.jsonl (created when missing), as `jwz post` would, for idle's TUI and `jwz read`."},
		{Name: "review.on_complete", Kind: KindBool, Default: false,
			Doc: "Have Weft and Warp review a plan's work when it completes; a rejection makes start-work exit non-zero."},

		{Name: "context_window.warn_ratio", Kind: KindFloat, Default: 0.80, check: ratio,
			Doc: "Share of the model's context window at which the agent is warned; in (0,1], below compact_ratio."},
		{Name: "context_window.compact_ratio", Kind: KindFloat, Default: 0.95, check: ratio,
			Doc: "Share of the model's context window at which compaction is requested; in (0,1]."},

		{Name: "delegation.max_depth", Kind: KindInt, Default: 3, check: minInt(0),
			Doc: "How deep delegation may nest; 0 forbids delegation."},

		{Name: "agents", Kind: KindMap, Default: map[string]AgentConfig{}, Allowed: agentNames,
			Doc: "Per-agent overrides by agent name: tools (narrows the role's row), allow_widen, model (an entry of models, or a model name for the model section's provider), fallback (entries of models tried in order when its model fails), temperature, prompt_append, mcp (the MCP servers the role may use, \"*\" for all; default all for roles whose row has write or edit, none for read-only roles; [] for none).",
			Example: `agents:
  pattern:
    model: deep                 # an entry of models:, or a model name
    fallback: [fast]
    temperature: 0.2
    prompt_append: Keep plans short.
  thread:
    tools: [read, grep, glob]   # narrows the role's default row
  shuttle:
    tools: [read, bash]
    allow_widen: true           # needed when tools names a tool outside the row
  weft:
    mcp: [github]               # a read-only role gets MCP servers only when named`},
		{Name: "categories", Kind: KindMap, Default: map[string]CategoryConfig{},
			Doc: "Categories of tasks: each becomes an agent shuttle-<name> (Shuttle with the category's model and fallback, as agents.<name>, temperature, tools narrowing Shuttle's row, prompt_append, and skills: the skills loaded into its first request) that runs the plan tasks tagged [category: <name>] and that Loom may delegate to.",
			Example: `categories:
  frontend:
    model: gpt-4.1-mini
    temperature: 0.3
    tools: [read, write, edit, bash, glob, grep, plan_check]
    prompt_append: Use the design system in web/ui; no inline styles.
    skills: [react-components]   # .weave/skills/react-components/SKILL.md`},
		{Name: "custom_agents", Kind: KindMap, Default: map[string]CustomAgentConfig{},
			Doc: "Agents the project adds, by name: description (when Loom should use it), prompt or prompt_file (relative to the project root, or to the user config directory in the user file), mode (subagent, the default: Loom may delegate to it; primary: weave chat --agent NAME), tools (default: read, bash, glob, grep, webfetch, skill), model and fallback (as agents.<name>), temperature, delegates (needs task in tools), mcp (the MCP servers it may use, as agents.<name>.mcp). weave agents list shows them.",
			Example: `custom_agents:
  docs-writer:
    description: documentation pages need writing or updating
    prompt_file: .weave/agents/docs-writer.md
    tools: [read, write, edit, glob, grep]
    model: gpt-4.1-mini
    temperature: 0.4`},
		{Name: "disabled_agents", Kind: KindStrings, Default: []string{},
			Doc: "Agents that are turned off (not loom or tapestry); Loom no longer delegates to them or names them. A later layer's list replaces an earlier one."},

		{Name: "model.provider", Kind: KindString, Default: "none", Allowed: providerValues(),
			Doc: "Model provider the agents use; none runs only runbook tasks."},
		{Name: "model.name", Kind: KindString, Default: "",
			Doc: "Model name passed to the provider (e.g. gpt-4.1, claude-sonnet-4-5, qwen3 on Ollama); required with a provider."},
		{Name: "model.base_url", Kind: KindString, Default: "", check: optionalURL,
			Doc: "Provider endpoint; empty means the provider's default."},
		{Name: "model.api_key_env", Kind: KindString, Default: "", check: optionalEnvName,
			Doc: "Name of the environment variable holding the API key (never the key itself); empty means " + providerKeyEnvs() + " by provider."},
		{Name: "model.max_tokens", Kind: KindInt, Default: 0, check: minInt(0),
			Doc: "Most tokens one answer may have; 0 means the provider's default (8192 for anthropic). A streamed answer past it is stopped with an error, as is one past 4 MiB whatever this says."},
		{Name: "model.context_window", Kind: KindInt, Default: 0, check: minInt(0),
			Doc: "Model context window in tokens; 0 means the provider's default."},
		{Name: "prices", Kind: KindMap, Default: map[string]PriceConfig{},
			Doc: "Models' prices in US dollars per million tokens, by model name (as model.name or the answer names it): input, output, cache_read, cache_write. They override weave's defaults for the well-known OpenAI, Anthropic and Gemini models (a field left out keeps the default's) and price models it does not know; a model without a price shows its cost as unknown (?), and a budget refuses to call it.",
			Example: `prices:
  claude-sonnet-4-5:
    input: 3
    output: 15
    cache_read: 0.3
    cache_write: 3.75
  qwen3:                # a local model: free
    input: 0
    output: 0`},
		{Name: "budget.run", Kind: KindFloat, Default: 0.0, check: dollars,
			Doc: "Most one run may spend on models, in US dollars, resumes included (start-work --budget and chat --budget set it too); 0 means no budget. Each model call is checked before it is made, its max_tokens priced as output: one that could cross the budget is not made, and the run pauses (exit 3) until `weave budget raise` or a higher --budget."},
		{Name: "budget.plan", Kind: KindFloat, Default: 0.0, check: dollars,
			Doc: "Most a plan's tasks may spend on models, in US dollars, across its runs (kept in .weave/state.json); 0 means no budget."},
		{Name: "budget.task", Kind: KindFloat, Default: 0.0, check: dollars,
			Doc: "Most one task may spend on models, in US dollars, unless its line has its own [budget: $N] tag; 0 means no budget."},
		{Name: "model.timeout", Kind: KindDuration, Default: 5 * time.Minute, check: minDuration(0),
			Doc: "Longest one model call may take; 0 means no limit."},
		{Name: "model.reasoning_effort", Kind: KindString, Default: "", check: reasoningEffort,
			Doc: "How hard a reasoning model thinks: " + strings.Join(reasoningEfforts, ", ") + "; sent as reasoning_effort (openai, azure, gemini); empty sends none. With it set (not none), no temperature is sent: reasoning models refuse one."},
		{Name: "model.thinking_budget", Kind: KindInt, Default: 0, check: minInt(0),
			Doc: "Tokens the model may think before it answers: Anthropic's extended thinking (thinking: {type: enabled, budget_tokens}, at least 1024, below max_tokens, which defaults to the budget plus 8192) or Gemini's thinking_budget; 0 is off."},
		{Name: "model.azure.endpoint", Kind: KindString, Default: "", check: optionalURL,
			Doc: "Azure OpenAI resource endpoint (https://<resource>.openai.azure.com) for provider azure; empty means model.base_url."},
		{Name: "model.azure.api_version", Kind: KindString, Default: "2024-10-21",
			Doc: "Azure OpenAI API version, sent as ?api-version= (provider azure)."},
		{Name: "model.azure.deployment", Kind: KindString, Default: "",
			Doc: "Azure OpenAI deployment that serves the model (provider azure); empty means model.name."},
		{Name: "model.fallback", Kind: KindStrings, Default: []string{}, check: entryNames,
			Doc: "Entries of models tried in order when an agent's model fails (a 429 or 5xx past its retries, overloaded, out of quota, no such model) and the agent has no fallback of its own (agents.<name>.fallback)."},

		{Name: "models", Kind: KindMap, Default: map[string]ModelConfig{},
			Doc: "Named model entries, each with the fields of the model section but fallback (provider, name, base_url, api_key_env, max_tokens, context_window, timeout, reasoning_effort, thinking_budget, azure); an agent's, a category's or a custom agent's model naming an entry uses it, so one run may have agents on several vendors. A later layer's entry replaces an earlier one of the same name.",
			Example: `models:
  deep:
    provider: anthropic
    name: claude-sonnet-4-5
    thinking_budget: 4096
  fast:
    provider: openai
    name: gpt-4.1-mini
    reasoning_effort: low
  work:
    provider: azure
    name: gpt-4.1
    azure: {endpoint: "https://acme.openai.azure.com", deployment: gpt41}
  flash:
    provider: gemini
    name: gemini-2.5-flash`},

		{Name: "plugins", Kind: KindList, Default: []PluginConfig{},
			Doc: "Extra plugin binaries: name, path, args, env, optional. A plugin that cannot start stops the run unless optional: true; an entry with a name and optional: true but no path marks a plugin found in .weave/plugins/ optional. A later layer's entry replaces an earlier one of the same name.",
			Example: `plugins:
  - name: no-rm-rf
    path: /usr/local/bin/weave-no-rm-rf
    args: [--strict]
    env:
      NO_RM_RF_LOG: /tmp/no-rm-rf.log
  - name: stats          # found in .weave/plugins/; the run goes on without it
    optional: true`},
		{Name: "plugin.start_timeout", Kind: KindDuration, Default: 10 * time.Second, check: minDuration(1),
			Doc: "Longest a plugin may take to start and answer the handshake."},
		{Name: "plugin.max_restarts", Kind: KindInt, Default: 5, check: minInt(0),
			Doc: "Restarts of a crashing plugin before it is disabled."},
		{Name: "plugin.call_timeout", Kind: KindDuration, Default: 60 * time.Second, check: minDuration(1),
			Doc: "Longest one call into a plugin may take."},

		{Name: "mcp_servers", Kind: KindMap, Default: map[string]MCPServerConfig{}, Doc: mcpDoc,
			Example: `mcp_servers:
  github:
    command: npx
    args: [-y, "@modelcontextprotocol/server-github"]
    env:
      GITHUB_PERSONAL_ACCESS_TOKEN: ${GITHUB_TOKEN}   # read from the environment at start
  docs:
    type: http                  # Streamable HTTP; sse for the older transport
    url: https://mcp.example.com/mcp
    headers:
      Authorization: Bearer ${DOCS_TOKEN}`},

		{Name: "hooks", Kind: KindMap, Default: map[string][]HookMatcher{}, Allowed: hookEvents,
			Doc: "Hooks in Claude Code's settings shape: event -> [{matcher, hooks: [{type, command | url, headers, allowedEnvVars, timeout, if, async, once, statusMessage}]}]. Every event Claude Code documents is accepted; one Weave does not fire, and the prompt, agent and mcp_tool types, are a warning and do not run. Entries of all layers run.",
			Example: `hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: ./scripts/check-command.sh
          timeout: 30             # seconds; default 60
          if: Bash(git push*)     # only for the calls this rule matches
  PostToolUse:
    - matcher: Edit|Write
      hooks:
        - type: http              # POSTs the event's JSON; the answer is read as a command's stdout
          url: http://127.0.0.1:8080/hooks
          headers:
            Authorization: Bearer $HOOK_TOKEN
          allowedEnvVars: [HOOK_TOKEN]
          async: true             # run without waiting`},
		{Name: "disabled_hooks", Kind: KindStrings, Default: []string{},
			Doc: "Hooks that do not run: a built-in by its short name (verification-reminder) or ID (weave.verification-reminder), a plugin or command hook by the name weave hooks list shows; an unknown name is an error. A later layer's list replaces an earlier one."},
		{Name: "hook.timeout", Kind: KindDuration, Default: 10 * time.Second, check: minDuration(1),
			Doc: "Default timeout of a plugin hook call."},
		{Name: "hook.max_reason_bytes", Kind: KindInt, Default: 8 << 10, check: minInt(256),
			Doc: "Longest block reason kept from one hook decision, in bytes; the rest is cut (it is shown, logged and stored in state.json)."},
		{Name: "hook.max_context_bytes", Kind: KindInt, Default: 1 * mib, check: minInt(1024),
			Doc: "Longest context one hook decision may add for the model, in bytes; the rest is cut."},

		{Name: "permissions", Kind: KindMap, Default: PermissionsConfig{},
			Doc: "Permission rules in Claude Code's syntax, checked on every tool call under the roles' rows (a rule never widens a row): deny, then ask, then allow. ask puts the call to the person in weave chat (elsewhere it is denied, unless --ask-via bus). defaultMode: default asks, dontAsk denies, plan refuses bash, write, edit, webfetch and MCP calls no rule decides; unset or bypassPermissions leaves them to the rows; acceptEdits is default without asking for write and edit. Lists of every layer and of .claude/settings.json and .claude/settings.local.json add up. additionalDirectories and disableBypassPermissionsMode are accepted and not used.",
			Example: `permissions:
  allow: ["Bash(git status:*)", "Bash(go test *)", "Edit(src/**)"]
  ask: ["Bash(rm:*)", "mcp__github__create_issue"]
  deny: ["Bash(git push:*)", "Read(.env)", "WebFetch(domain:example.com)"]
  defaultMode: default      # ask before any other bash, write, edit, webfetch`},

		{Name: "tools.bash.timeout", Kind: KindDuration, Default: 2 * time.Minute, check: minDuration(1),
			Doc: "Longest one bash tool call may run."},
		{Name: "tools.bash.max_output_bytes", Kind: KindInt, Default: 1 * mib, check: minInt(1),
			Doc: "Bash tool output kept, in bytes; the rest is cut."},
		{Name: "tools.webfetch.enabled", Kind: KindBool, Default: true,
			Doc: "Whether the webfetch tool may be used at all."},
		{Name: "tools.webfetch.timeout", Kind: KindDuration, Default: 30 * time.Second, check: minDuration(1),
			Doc: "Longest one webfetch may take."},
		{Name: "tools.webfetch.max_bytes", Kind: KindInt, Default: 5 * mib, check: minInt(1),
			Doc: "Largest response body webfetch reads, in bytes."},
		{Name: "tools.webfetch.allow", Kind: KindStrings, Default: []string{}, check: netRules,
			Doc: "Hosts (example.com, *.example.com), IP addresses or CIDRs webfetch may reach though refused by default (loopback, private, link-local, metadata and other non-public addresses); a host name listed is trusted whatever it resolves to."},
		{Name: "tools.webfetch.deny", Kind: KindStrings, Default: []string{},
			check: netRules,
			Doc:   "Hosts, IP addresses or CIDRs webfetch never reaches, public ones included; deny wins over allow."},
		{Name: "tools.read.max_bytes", Kind: KindInt, Default: 1 * mib, check: minInt(1),
			Doc: "Largest file the read tool returns whole, in bytes."},
		{Name: "tools.max_parallel", Kind: KindInt, Default: 4, check: minInt(1),
			Doc: "How many tool calls of one session run at once (an agent may ask for many in one turn); the rest wait, in the order they came, until one ends."},

		{Name: "sandbox.mode", Kind: KindString, Default: "auto", Allowed: []string{"auto", "strict", "off"},
			Doc: "How bash tool calls are sandboxed (Linux user namespaces; docs/sandbox.md): auto sandboxes where the machine allows it and otherwise warns once per run and runs bash as it is, strict refuses bash where no sandbox is possible, off never sandboxes. In the sandbox the project is writable but for its host-owned files (read-only for roles without write and edit), the rest of the file system is read-only, /tmp and /proc are private, and nothing outlives the call."},
		{Name: "sandbox.network", Kind: KindString, Default: "deny", Allowed: []string{"deny", "allow"},
			Doc: "Whether sandboxed bash reaches the network: deny gives it a loopback interface of its own and nothing else; allow keeps the host's network."},
		{Name: "sandbox.blocks", Kind: KindBool, Default: false,
			Doc: "Run a plan's runbook and verify blocks in the sandbox too (with the project writable but for its host-owned files); by default only the bash calls a model makes are sandboxed."},
		{Name: "sandbox.writable", Kind: KindStrings, Default: []string{}, check: sandboxPaths,
			Doc: "More paths sandboxed bash may write, absolute or ~/ for the home directory (a build cache such as ~/.cache/go-build); a path that does not exist is left out."},

		{Name: "bus.backend", Kind: KindString, Default: "memory", Allowed: []string{"memory", "nats"},
			Doc: "Message bus backend: memory (embedded) or nats."},
		{Name: "bus.url", Kind: KindString, Default: "", check: optionalURL, CredentialURL: true,
			Doc: "Bus to join (nats:// or tls:// for the nats backend, ws:// for a standalone weave bus); empty runs one in process. Credentials in the URL (nats://user:pass@host) work but are better given by the bus.nats.* keys; the URL is shown with them redacted and children get it without them."},
		{Name: "bus.nats.creds_file", Kind: KindString, Default: "",
			Doc: "NATS credentials file (user JWT and nkey seed, as nsc writes it) the nats backend authenticates with."},
		{Name: "bus.nats.nkey_file", Kind: KindString, Default: "",
			Doc: "File holding the NATS nkey seed (SU...) the nats backend authenticates with."},
		{Name: "bus.nats.user", Kind: KindString, Default: "",
			Doc: "NATS user name; its password comes from bus.nats.password_file or bus.nats.password_env."},
		{Name: "bus.nats.password_file", Kind: KindString, Default: "",
			Doc: "File holding the password of bus.nats.user (surrounding white space is dropped)."},
		{Name: "bus.nats.password_env", Kind: KindString, Default: "", check: secretEnvName("NATS_PASSWORD"),
			Doc: "Environment variable holding the password of bus.nats.user; its name must mark it secret (PASSWORD, TOKEN, SECRET, ...) so that no child of weave gets it."},
		{Name: "bus.nats.token_file", Kind: KindString, Default: "",
			Doc: "File holding the NATS authentication token (surrounding white space is dropped)."},
		{Name: "bus.nats.token_env", Kind: KindString, Default: "", check: secretEnvName("NATS_TOKEN"),
			Doc: "Environment variable holding the NATS authentication token; its name must mark it secret (TOKEN, PASSWORD, SECRET, ...) so that no child of weave gets it."},
		{Name: "bus.nats.ca_file", Kind: KindString, Default: "",
			Doc: "PEM file of the CA certificates that sign the NATS server's certificate; setting it (or a client certificate) turns TLS on."},
		{Name: "bus.nats.cert_file", Kind: KindString, Default: "",
			Doc: "PEM client certificate for NATS TLS (with bus.nats.key_file), when the server verifies clients."},
		{Name: "bus.nats.key_file", Kind: KindString, Default: "",
			Doc: "PEM private key of bus.nats.cert_file."},
		{Name: "bus.nats.server_name", Kind: KindString, Default: "",
			Doc: "Name the NATS server's certificate must carry, when it differs from the host in bus.url."},
		{Name: "bus.default_policy", Kind: KindString, Default: "stopPropagationOnProcessed",
			Allowed: []string{"stopPropagationOnProcessed", "stopPropagationOnStop", "continueAll"},
			Doc:     "Propagation policy of a subscription that names none."},
		{Name: "bus.max_attempts", Kind: KindInt, Default: 3, check: minInt(1),
			Doc: "Delivery attempts before a message goes to the dead-letter topic."},
		{Name: "bus.request_timeout", Kind: KindDuration, Default: 30 * time.Second, check: minDuration(1),
			Doc: "Longest a subscriber may take to answer one request."},
		{Name: "bus.idempotency_window", Kind: KindDuration, Default: 10 * time.Minute, check: minDuration(0),
			Doc: "How long an idempotency key suppresses duplicates; 0 turns it off."},
		{Name: "bus.queue_size", Kind: KindInt, Default: 1024, check: minInt(1),
			Doc: "Messages queued per subscriber before the slow-subscriber policy applies."},
		{Name: "bus.max_log_messages", Kind: KindInt, Default: 100000, check: minInt(1),
			Doc: "Messages each append-only topic keeps (loop:trace, issue:*, ...); the oldest are dropped, offsets keep counting."},
		{Name: "bus.max_dead_letters", Kind: KindInt, Default: 10000, check: minInt(1),
			Doc: "Dead letters kept for weave bus dlq; the oldest are dropped."},
		{Name: "bus.agent_command", Kind: KindString, Default: "",
			Doc: "Command started for a message on a topic nobody subscribes to; empty disables it."},
		{Name: "bus.max_frame_bytes", Kind: KindInt, Default: 1 * mib, check: minInt(1),
			Doc: "Largest WebSocket frame or socket line accepted, in bytes."},
		{Name: "bus.max_subscriptions", Kind: KindInt, Default: 256, check: minInt(1),
			Doc: "Subscriptions one connection may hold."},
		{Name: "bus.max_in_flight", Kind: KindInt, Default: 64, check: minInt(1),
			Doc: "sendMessage requests one WebSocket connection may have running, batch elements included; past it the server stops reading that connection."},
		{Name: "bus.max_total_subscriptions", Kind: KindInt, Default: 16384, check: minInt(1),
			Doc: "Subscriptions all connections of a bus serve may hold together."},
		{Name: "bus.max_connections", Kind: KindInt, Default: 1024, check: minInt(1),
			Doc: "Open connections a bus serve accepts on each face (WebSocket, HTTP)."},
		{Name: "bus.max_guest_connections", Kind: KindInt, Default: 0, check: minInt(0),
			Doc: "Connections the peers without the bus token may hold together on each face of a bus serve (WebSocket connections, event streams of the HTTP face); 0 means half of bus.max_connections (a value at or above it too), so token holders always keep room."},
		{Name: "bus.max_topics", Kind: KindInt, Default: 10000, check: minInt(1),
			Doc: "Retained and append-only topics the embedded bus keeps; a publish that would keep one more fails."},
		{Name: "bus.max_store_bytes", Kind: KindInt, Default: 256 * mib, check: minInt(1024),
			Doc: "Bytes the embedded bus's retained and append-only topics hold together; an append drops its topic's oldest messages to fit, a publish that still does not fit fails."},
		{Name: "bus.max_sessions", Kind: KindInt, Default: 1000, check: minInt(1),
			Doc: "Open sessions the v1 envelope faces of a bus serve hold at once."},
		{Name: "bus.http_body_timeout", Kind: KindDuration, Default: 30 * time.Second, check: minDuration(1),
			Doc: "Longest a client of a bus serve's HTTP faces may take to send one request body."},
		{Name: "bus.http_idle_timeout", Kind: KindDuration, Default: 2 * time.Minute, check: minDuration(1),
			Doc: "How long a bus serve keeps an idle HTTP connection open."},
		{Name: "bus.require_payload_type", Kind: KindBool, Default: false,
			Doc: "Refuse a JSON-RPC sendMessage whose payload has no string field type (the seed's strict check)."},
		{Name: "bus.token", Kind: KindString, Default: "", Secret: true,
			Doc: "Bearer token peers must present; required when the bus listens beyond loopback."},
	}
}

// envName maps a key to its environment variable: log.level -> WEAVE_LOG_LEVEL.
func envName(key string) string {
	return "WEAVE_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// convert turns a raw value from a file, the environment or a flag into the
// key's Go type. It returns a problem in words when it cannot.
func convert(k Kind, raw any) (any, string) {
	switch k {
	case KindString:
		if s, ok := raw.(string); ok {
			return s, ""
		}
		return nil, fmt.Sprintf("want a string, got %s (quote it)", describe(raw))
	case KindInt:
		if n, ok := toInt(raw); ok {
			return n, ""
		}
		return nil, fmt.Sprintf("want a whole number, got %s", describe(raw))
	case KindFloat:
		if f, ok := toFloat(raw); ok {
			return f, ""
		}
		return nil, fmt.Sprintf("want a number, got %s", describe(raw))
	case KindBool:
		switch b := raw.(type) {
		case bool:
			return b, ""
		case string:
			if v, err := strconv.ParseBool(strings.TrimSpace(b)); err == nil {
				return v, ""
			}
		}
		return nil, fmt.Sprintf("want true or false, got %s", describe(raw))
	case KindDuration:
		switch d := raw.(type) {
		case time.Duration:
			return d, ""
		case string:
			v, err := time.ParseDuration(strings.TrimSpace(d))
			if err == nil {
				return v, ""
			}
		default:
			// A bare 0 is unambiguous; any other number has no unit.
			if n, ok := toInt(raw); ok && n == 0 {
				return time.Duration(0), ""
			}
		}
		return nil, fmt.Sprintf("want a Go duration like 30s, 5m or 1h30m, got %s", describe(raw))
	case KindStrings:
		return toStrings(raw)
	}
	return nil, fmt.Sprintf("kind %s cannot be set here", k)
}

func toStrings(raw any) ([]string, string) {
	switch v := raw.(type) {
	case []string:
		return append([]string{}, v...), ""
	case string:
		// The environment and flags give lists comma-separated.
		out := []string{}
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, ""
	case []any:
		out := make([]string, 0, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Sprintf("item %d: want a string, got %s", i, describe(e))
			}
			out = append(out, s)
		}
		return out, ""
	}
	return nil, fmt.Sprintf("want a list of strings, got %s", describe(raw))
}

func toInt(raw any) (int, bool) {
	switch v := raw.(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case uint64:
		if v <= math.MaxInt64 {
			return int(v), true
		}
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return int(n), true
		}
		// 30.0 is a whole number too.
		f, err := v.Float64()
		if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int(f), true
		}
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int(v), true
		}
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil
	}
	// Other integer types, as a flag parser may hand over.
	rv := reflect.ValueOf(raw)
	switch rv.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return int(rv.Int()), true
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint:
		return int(rv.Uint()), true
	}
	return 0, false
}

func toFloat(raw any) (float64, bool) {
	switch v := raw.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	case float32:
		return float64(v), true
	}
	if n, ok := toInt(raw); ok {
		return float64(n), true
	}
	return 0, false
}

// describe names a raw value for an error message.
func describe(raw any) string {
	switch v := raw.(type) {
	case nil:
		return "nothing"
	case string:
		return strconv.Quote(v)
	case bool, int, int64, uint64, float64, json.Number:
		return fmt.Sprintf("%v", v)
	case []any, []string:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("a %T", raw)
}

// shellName accepts one command name or path, with no arguments.
func shellName(v any) string {
	s := v.(string)
	switch {
	case s == "":
		return "must not be empty; name a shell such as sh or bash"
	case strings.ContainsAny(s, " \t\n"):
		return fmt.Sprintf("%q is not one shell: name the program only (sh, bash, zsh or a path), without arguments", s)
	}
	return ""
}

// remoteName accepts "" or the name of a git remote.
func remoteName(v any) string {
	s := v.(string)
	if s != "" && (strings.HasPrefix(s, "-") || strings.ContainsAny(s, " \t\n:/\\")) {
		return fmt.Sprintf("%q is not a git remote's name; want a name such as origin (`git remote -v` lists them)", s)
	}
	return ""
}

// netRules accepts a list of host names, IP addresses and CIDRs, as
// internal/netpolicy reads them.
func netRules(v any) string {
	for i, s := range v.([]string) {
		if _, err := netpolicy.ParseRule(s); err != nil {
			return fmt.Sprintf("item %d: %v", i, err)
		}
	}
	return ""
}

// fileNames wants plain file names, no folders: instruction files are
// looked for in each folder.
func fileNames(v any) string {
	for _, n := range v.([]string) {
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, `/\`) {
			return fmt.Sprintf("%q is not a file name; want names like AGENTS.md", n)
		}
	}
	return ""
}

// sandboxPaths wants every path absolute or under ~/.
func sandboxPaths(v any) string {
	for i, s := range v.([]string) {
		if !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/") {
			return fmt.Sprintf("item %d: %q is neither absolute nor under ~/", i, s)
		}
	}
	return ""
}

func nonEmpty(v any) string {
	if v.(string) == "" {
		return "must not be empty"
	}
	return ""
}

// MaxRetries bounds runbook.retries: a task that failed eleven times will
// not pass on the twelfth, and every attempt may cost a model's tokens.
const MaxRetries = 10

// intBetween accepts lo to hi, both included.
func intBetween(lo, hi int) func(any) string {
	return func(v any) string {
		switch n := v.(int); {
		case n < lo:
			return fmt.Sprintf("%d is too small; want %d or more", n, lo)
		case n > hi:
			return fmt.Sprintf("%d is over the limit of %d; use %d or less", n, hi, hi)
		}
		return ""
	}
}

func minInt(lo int) func(any) string {
	return func(v any) string {
		if v.(int) < lo {
			return fmt.Sprintf("%d is too small; want %d or more", v.(int), lo)
		}
		return ""
	}
}

// minDuration(0) allows zero; minDuration(1) wants a positive duration.
func minDuration(lo time.Duration) func(any) string {
	return func(v any) string {
		d := v.(time.Duration)
		if d >= lo {
			return ""
		}
		if lo == 0 {
			return fmt.Sprintf("%s is negative; want 0 (no limit) or more", d)
		}
		return fmt.Sprintf("%s is too short; want a positive duration like 30s", d)
	}
}

func ratio(v any) string {
	f := v.(float64)
	if f > 0 && f <= 1 {
		return ""
	}
	return fmt.Sprintf("%v is outside (0,1]; want a ratio like 0.8", f)
}

func optionalURL(v any) string {
	s := v.(string)
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Sprintf("%q is not a URL; want scheme://host[:port][/path] or empty", proc.RedactURL(s))
	}
	return ""
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// secretEnvName checks a key that names the variable holding a secret:
// the name must be one the child environment policy withholds
// (proc.IsSecret), so that the secret reaches no runbook block, tool call,
// plugin or hook.
func secretEnvName(example string) func(any) string {
	return func(v any) string {
		s := v.(string)
		if s == "" {
			return ""
		}
		if !envNameRE.MatchString(s) {
			// The value is not echoed: it may be the secret itself.
			return "is not an environment variable name; put the secret in a variable and name that variable here, e.g. " + example
		}
		if !proc.IsSecret(s, "") {
			return fmt.Sprintf("%s does not look secret to weave, so children would get it: name a variable with PASSWORD, TOKEN or SECRET in it, e.g. %s", s, example)
		}
		return ""
	}
}

// reasoningEfforts are the values of reasoning_effort, as the OpenAI wire
// spells them.
var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

func reasoningEffort(v any) string {
	if s := v.(string); s != "" && !slices.Contains(reasoningEfforts, s) {
		return oneOf(s, reasoningEfforts)
	}
	return ""
}

// entryNames checks the form of a fallback list; that each names an entry
// of models is checked once every layer is read (checkModels).
func entryNames(v any) string {
	for i, s := range v.([]string) {
		if strings.TrimSpace(s) == "" {
			return fmt.Sprintf("item %d is empty; want the name of an entry of models", i)
		}
	}
	return ""
}

func optionalEnvName(v any) string {
	s := v.(string)
	if s == "" || envNameRE.MatchString(s) {
		return ""
	}
	// The value is not echoed: it may be the key itself.
	return "is not an environment variable name; put the API key in a variable and name that variable here, e.g. " + modelProviders[0].keyEnv
}
