package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/weavehq/weave/internal/layout"
)

// Config is Weave's whole effective configuration. Load fills every field;
// the zero Config is not meaningful, use Default for a config of defaults.
type Config struct {
	Log              LogConfig              `mapstructure:"log"`
	Runbook          RunbookConfig          `mapstructure:"runbook"`
	WorkContinuation WorkContinuationConfig `mapstructure:"work_continuation"`
	Review           ReviewConfig           `mapstructure:"review"`
	Loop             LoopConfig             `mapstructure:"loop"`
	Run              RunConfig              `mapstructure:"run"`
	ContextWindow    ContextWindowConfig    `mapstructure:"context_window"`
	Delegation       DelegationConfig       `mapstructure:"delegation"`
	Instructions     InstructionsConfig     `mapstructure:"instructions"`
	// Agents holds overrides by agent name (loom, tapestry, ...); a missing
	// name means the role's own settings.
	Agents map[string]AgentConfig `mapstructure:"-"`
	// Categories holds settings for tasks tagged [category: name]; each
	// becomes an agent shuttle-<name>.
	Categories map[string]CategoryConfig `mapstructure:"-"`
	// CustomAgents are roles the project adds, by name.
	CustomAgents map[string]CustomAgentConfig `mapstructure:"-"`
	// DisabledAgents are roles that are turned off.
	DisabledAgents []string    `mapstructure:"disabled_agents"`
	Model          ModelConfig `mapstructure:"model"`
	// Models are the named model entries of models:, by name; an agent's
	// model (or a fallback) naming one uses it (docs/models.md).
	Models map[string]ModelConfig `mapstructure:"-"`
	// Plugins are extra plugin binaries, in the order they were listed.
	Plugins []PluginConfig   `mapstructure:"-"`
	Plugin  PluginHostConfig `mapstructure:"plugin"`
	// Hooks are command hooks in Claude Code's settings shape, by event name
	// (PreToolUse, ...). Entries of every layer are kept, lowest layer first.
	Hooks         map[string][]HookMatcher `mapstructure:"-"`
	DisabledHooks []string                 `mapstructure:"disabled_hooks"`
	Hook          HookConfig               `mapstructure:"hook"`
	Tools         ToolsConfig              `mapstructure:"tools"`
	Sandbox       SandboxConfig            `mapstructure:"sandbox"`
	Bus           BusConfig                `mapstructure:"bus"`
	// MCPServers are the MCP servers of mcp_servers, by name.
	MCPServers map[string]MCPServerConfig `mapstructure:"-"`
	// Permissions are the allow, ask and deny rules in Claude Code's
	// syntax; every layer's lists add up.
	Permissions PermissionsConfig `mapstructure:"-"`
	// Prices override or add models' prices, by model name.
	Prices map[string]PriceConfig `mapstructure:"-"`
	// Budget holds the budgets that pause a run.
	Budget BudgetConfig `mapstructure:"budget"`
}

// SandboxConfig governs the sandbox the bash tool runs in (docs/sandbox.md).
type SandboxConfig struct {
	// Mode is auto (sandbox where the machine allows it, else warn once
	// and run bash as it is), strict (refuse bash where it cannot be
	// sandboxed) or off.
	Mode string `mapstructure:"mode"`
	// Network is deny (only a loopback of its own) or allow (the host's).
	Network string `mapstructure:"network"`
	// Blocks runs a plan's runbook and verify blocks in the sandbox too,
	// with the project writable.
	Blocks bool `mapstructure:"blocks"`
	// Writable are more paths (absolute, or ~/ for the home directory)
	// that bash may write, such as a build cache.
	Writable []string `mapstructure:"writable"`
}

// LogConfig is the log section.
type LogConfig struct {
	Level  string `mapstructure:"level"`  // debug, info, warn, error
	Format string `mapstructure:"format"` // text, json
	// MaxBytes, Backups and MaxValueBytes bound the host log: its size
	// before it rotates, the rotated files kept, one record's values.
	MaxBytes      int `mapstructure:"max_bytes"`
	Backups       int `mapstructure:"backups"`
	MaxValueBytes int `mapstructure:"max_value_bytes"`
}

// RunbookConfig governs tasks executed from their shell blocks.
type RunbookConfig struct {
	Shell        string        `mapstructure:"shell"`
	BlockTimeout time.Duration `mapstructure:"block_timeout"` // 0: no limit
	Retries      int           `mapstructure:"retries"`
	OutputTail   int           `mapstructure:"output_tail"`
	MaxLogBytes  int           `mapstructure:"max_log_bytes"` // a task log's size before it rotates
}

// WorkContinuationConfig governs re-prompting an idle agent with work left.
type WorkContinuationConfig struct {
	Enabled        bool `mapstructure:"enabled"`
	MaxStaleNudges int  `mapstructure:"max_stale_nudges"`
}

// ReviewConfig governs the reviews of finished work by Weft and Warp.
type ReviewConfig struct {
	// OnComplete has a plan reviewed when its last task is ticked.
	OnComplete bool `mapstructure:"on_complete"`
}

// RunConfig governs a start-work run with workers (docs/workers.md).
type RunConfig struct {
	// Workers is how many ready tasks run at once, each in a git worktree
	// of its own; 1 runs them one after another in the project itself.
	Workers int `mapstructure:"workers"`
	// InferDeps treats tasks whose Files lists are disjoint as independent
	// in a plan that says no dependency.
	InferDeps bool `mapstructure:"infer_deps"`
	// Land is how a finished task lands on the integration branch: rebase
	// (one commit per task in a line) or merge.
	Land string `mapstructure:"land"`
	// Finish is what happens to the integration branch when the plan is
	// done: none (Weave says how to merge it) or ff (the branch the run
	// started from is fast-forwarded to it).
	Finish string `mapstructure:"finish"`
	// Remote names a git remote of the project that carries the code of a
	// run coordinated over NATS instead of bundles in JetStream; "" keeps
	// the bundles (docs/workers-nats.md).
	Remote string `mapstructure:"remote"`
	// Lease is how long a worker over NATS may stay silent before its
	// task is taken back and offered again (start-work --bus nats://).
	Lease time.Duration `mapstructure:"lease"`
}

// MaxWorkers bounds run.workers.
const MaxWorkers = 64

// LoopConfig governs where a run's loop events go besides the bus.
type LoopConfig struct {
	// JWZ appends them to the project's jwz store (.jwz/messages.jsonl),
	// as `jwz post loop:current` would, for idle and `jwz read`.
	JWZ bool `mapstructure:"jwz"`
}

// ContextWindowConfig holds the context-window monitor's thresholds;
// 0 < WarnRatio < CompactRatio <= 1.
type ContextWindowConfig struct {
	WarnRatio    float64 `mapstructure:"warn_ratio"`
	CompactRatio float64 `mapstructure:"compact_ratio"`
}

// DelegationConfig bounds delegation between agents.
type DelegationConfig struct {
	MaxDepth int `mapstructure:"max_depth"`
}

// InstructionsConfig says which files hold a project's instructions.
type InstructionsConfig struct {
	// Files are the instruction file names looked for in a directory, the
	// first found winning.
	Files []string `mapstructure:"files"`
}

// AgentConfig overrides one agent role.
type AgentConfig struct {
	// Tools narrows the role's capability row; empty means the default row.
	// Naming a tool outside the row needs AllowWiden.
	Tools        []string
	AllowWiden   bool
	Model        string   // "" means model.name
	Temperature  *float64 // nil means the role's own
	PromptAppend string
	// MCP names the MCP servers the role may use (MCPAll: every one); nil
	// means the default (every server for a role whose row has write or
	// bash, none for a read-only role), empty means none.
	MCP []string
	// Fallback names the models entries tried in order when the agent's
	// model fails (nil: model.fallback).
	Fallback []string
}

// CategoryConfig holds settings for tasks of one category.
type CategoryConfig struct {
	Model       string
	Temperature *float64
	// Tools narrows Shuttle's row for the category; empty keeps it.
	Tools        []string
	PromptAppend string
	// Skills are the skills loaded into the category's Shuttle from its
	// first request.
	Skills []string
	// Fallback is as AgentConfig.Fallback.
	Fallback []string
}

// CustomAgentConfig is one custom agent.
type CustomAgentConfig struct {
	// Description tells Loom when to delegate to it.
	Description string
	// Prompt is the system prompt: as written, or read from PromptFile.
	Prompt string
	// PromptFile is the file the prompt was read from, as written.
	PromptFile  string
	Mode        string // primary or subagent (default)
	Tools       []string
	Model       string
	Temperature *float64
	Delegates   []string
	// MCP is as AgentConfig.MCP.
	MCP []string
	// Fallback is as AgentConfig.Fallback.
	Fallback []string
}

// ModelConfig chooses the model provider. The API key itself is never in
// config: APIKeyEnv names the variable that holds it.
type ModelConfig struct {
	Provider      string        `mapstructure:"provider"` // none or a provider (modelProviders)
	Name          string        `mapstructure:"name"`
	BaseURL       string        `mapstructure:"base_url"`
	APIKeyEnv     string        `mapstructure:"api_key_env"`    // "": the provider's default variable
	MaxTokens     int           `mapstructure:"max_tokens"`     // 0: provider default
	ContextWindow int           `mapstructure:"context_window"` // tokens; 0: provider default
	Timeout       time.Duration `mapstructure:"timeout"`        // 0: no limit
	// ReasoningEffort is sent as the OpenAI wire's reasoning_effort; ""
	// sends none.
	ReasoningEffort string `mapstructure:"reasoning_effort"`
	// ThinkingBudget turns on Anthropic's extended thinking with this
	// many tokens (Gemini's thinking_budget); 0: off.
	ThinkingBudget int         `mapstructure:"thinking_budget"`
	Azure          AzureConfig `mapstructure:"azure"`
	// Fallback names the models entries tried in order when an agent's
	// model fails and the agent names none of its own. Only the model
	// section has it; an entry's is empty.
	Fallback []string `mapstructure:"fallback"`
}

// AzureConfig is what Azure OpenAI needs besides a key: the resource's
// endpoint, the API version, and the deployment that serves the model.
type AzureConfig struct {
	Endpoint   string `mapstructure:"endpoint"`    // "": base_url
	APIVersion string `mapstructure:"api_version"` // sent as ?api-version=
	Deployment string `mapstructure:"deployment"`  // "": the model's name
}

// PluginConfig is one plugins: entry.
type PluginConfig struct {
	Name string
	// Path is the executable; empty (only with Optional) names a plugin
	// found in .weave/plugins/ or the user's plugin directory.
	Path string
	Args []string
	Env  map[string]string // names keep their case
	// Optional lets a run go on without the plugin when it cannot start or
	// describe itself; by default such a plugin stops the run, because it
	// may be a guard.
	Optional bool
}

// PluginHostConfig governs the plugin supervisor.
type PluginHostConfig struct {
	StartTimeout time.Duration `mapstructure:"start_timeout"`
	MaxRestarts  int           `mapstructure:"max_restarts"`
	CallTimeout  time.Duration `mapstructure:"call_timeout"`
}

// HookMatcher is one entry of a Claude Code hook event list.
type HookMatcher struct {
	// Matcher selects tools by name as Claude Code does (a regular
	// expression; "" or "*" matches all).
	Matcher string
	Hooks   []CommandHook
}

// CommandHook is one hook of a HookMatcher, in Claude Code's shape.
type CommandHook struct {
	// Type is the handler: "command" and "http" run; "prompt", "agent" and
	// "mcp_tool" are accepted, with a warning, and do not run.
	Type    string
	Command string // type command: run with sh -c
	// URL and Headers are an http hook's: the event's JSON is POSTed to
	// URL; a header value's $VAR or ${VAR} is replaced by the variable
	// when AllowedEnvVars names it, else by nothing (as in Claude Code).
	URL            string
	Headers        map[string]string
	AllowedEnvVars []string
	Timeout        int // seconds, as in Claude Code; 60 when not given
	// If narrows a tool hook with a permission rule (Bash(git *),
	// Edit(*.go)): the hook runs only for calls it matches.
	If string
	// Async runs the hook without waiting for it; its answer is ignored.
	Async bool
	// Once runs the hook once per session.
	Once bool
	// StatusMessage is shown while the hook runs (in the log for Weave).
	StatusMessage string
}

// TimeoutDuration is Timeout as a time.Duration.
func (h CommandHook) TimeoutDuration() time.Duration {
	return time.Duration(h.Timeout) * time.Second
}

// HookConfig holds defaults for plugin hooks.
type HookConfig struct {
	Timeout time.Duration `mapstructure:"timeout"`
	// MaxReasonBytes and MaxContextBytes bound a decision's texts.
	MaxReasonBytes  int `mapstructure:"max_reason_bytes"`
	MaxContextBytes int `mapstructure:"max_context_bytes"`
}

// ToolsConfig holds the limits of the host's tools.
type ToolsConfig struct {
	// MaxParallel is how many tool calls of one session run at once; the
	// rest wait in the order they came.
	MaxParallel int                `mapstructure:"max_parallel"`
	Bash        BashToolConfig     `mapstructure:"bash"`
	WebFetch    WebFetchToolConfig `mapstructure:"webfetch"`
	Read        ReadToolConfig     `mapstructure:"read"`
}

// BashToolConfig limits the bash tool.
type BashToolConfig struct {
	Timeout        time.Duration `mapstructure:"timeout"`
	MaxOutputBytes int           `mapstructure:"max_output_bytes"`
}

// WebFetchToolConfig limits the webfetch tool.
type WebFetchToolConfig struct {
	Enabled  bool          `mapstructure:"enabled"`
	Timeout  time.Duration `mapstructure:"timeout"`
	MaxBytes int           `mapstructure:"max_bytes"`
	// Allow and Deny widen and narrow the addresses webfetch may reach
	// (internal/netpolicy states the policy).
	Allow []string `mapstructure:"allow"`
	Deny  []string `mapstructure:"deny"`
}

// ReadToolConfig limits the read tool.
type ReadToolConfig struct {
	MaxBytes int `mapstructure:"max_bytes"`
}

// BusConfig configures the message bus.
type BusConfig struct {
	Backend           string        `mapstructure:"backend"` // memory, nats
	URL               string        `mapstructure:"url"`
	DefaultPolicy     string        `mapstructure:"default_policy"`
	MaxAttempts       int           `mapstructure:"max_attempts"`
	RequestTimeout    time.Duration `mapstructure:"request_timeout"`
	IdempotencyWindow time.Duration `mapstructure:"idempotency_window"` // 0: off
	QueueSize         int           `mapstructure:"queue_size"`
	MaxLogMessages    int           `mapstructure:"max_log_messages"`
	MaxDeadLetters    int           `mapstructure:"max_dead_letters"`
	AgentCommand      string        `mapstructure:"agent_command"`
	MaxFrameBytes     int           `mapstructure:"max_frame_bytes"`
	MaxSubscriptions  int           `mapstructure:"max_subscriptions"`
	MaxInFlight       int           `mapstructure:"max_in_flight"` // sendMessage requests running per connection
	// MaxTotalSubscriptions and MaxConnections bound a bus serve as a
	// whole.
	MaxTotalSubscriptions int `mapstructure:"max_total_subscriptions"`
	MaxConnections        int `mapstructure:"max_connections"`
	// MaxGuestConnections is the token-less peers' share of
	// MaxConnections; 0 means half.
	MaxGuestConnections int `mapstructure:"max_guest_connections"`
	MaxSessions         int `mapstructure:"max_sessions"`
	MaxTopics           int `mapstructure:"max_topics"`
	MaxStoreBytes       int `mapstructure:"max_store_bytes"`
	// HTTPBodyTimeout and HTTPIdleTimeout cut slow and idle HTTP clients.
	HTTPBodyTimeout time.Duration `mapstructure:"http_body_timeout"`
	HTTPIdleTimeout time.Duration `mapstructure:"http_idle_timeout"`
	// RequirePayloadType makes sendMessage refuse payloads without type.
	RequirePayloadType bool   `mapstructure:"require_payload_type"`
	Token              string `mapstructure:"token"`
	// NATS says how the nats backend authenticates and secures its
	// connection.
	NATS NATSConfig `mapstructure:"nats"`
}

// CredentialEnv names the variables config says hold weave's secrets
// (model.api_key_env and each models.<name>.api_key_env,
// bus.nats.password_env, bus.nats.token_env), which no
// child gets, not even a command hook that gets the person's environment.
func (c *Config) CredentialEnv() []string {
	var out []string
	names := []string{c.Model.APIKeyEnv, c.Bus.NATS.PasswordEnv, c.Bus.NATS.TokenEnv}
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		names = append(names, c.Models[name].APIKeyEnv)
	}
	for _, name := range names {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// NATSConfig holds the nats backend's credentials and TLS. Secrets are
// never values here: they are files or the names of variables.
type NATSConfig struct {
	CredsFile    string `mapstructure:"creds_file"`
	NKeyFile     string `mapstructure:"nkey_file"`
	User         string `mapstructure:"user"`
	PasswordFile string `mapstructure:"password_file"`
	PasswordEnv  string `mapstructure:"password_env"`
	TokenFile    string `mapstructure:"token_file"`
	TokenEnv     string `mapstructure:"token_env"`
	CAFile       string `mapstructure:"ca_file"`
	CertFile     string `mapstructure:"cert_file"`
	KeyFile      string `mapstructure:"key_file"`
	ServerName   string `mapstructure:"server_name"`
}

// Layer names where a value came from. Later layers override earlier ones.
type Layer string

// The layers, lowest first.
const (
	LayerDefault Layer = "default"
	LayerUser    Layer = "user"
	LayerProject Layer = "project"
	LayerEnv     Layer = "env"
	LayerFlag    Layer = "flag"
)

func (l Layer) rank() int {
	return slices.Index([]Layer{LayerDefault, LayerUser, LayerProject, LayerEnv, LayerFlag}, l)
}

// Options says where Load looks.
type Options struct {
	// ProjectDir is the project root, which holds .weave/; "" means no
	// project layer.
	ProjectDir string
	// UserConfigDir holds the user file; "" means $XDG_CONFIG_HOME/weave,
	// falling back to ~/.config/weave.
	UserConfigDir string
	// Environ is the environment in os.Environ() form; nil means no
	// environment layer. Empty WEAVE_* values are ignored.
	Environ []string
	// Flags are overrides by key ("log.level" -> "debug"), already parsed.
	// Values may be typed or strings; lists may be comma-separated strings.
	Flags map[string]any
}

// UserDir is the directory of the user config file: UserConfigDir, else
// $XDG_CONFIG_HOME/weave, else ~/.config/weave, else "" when no home is
// known. XDG_CONFIG_HOME and HOME are read from Environ when it is set.
func (o Options) UserDir() string {
	if o.UserConfigDir != "" {
		return o.UserConfigDir
	}
	return layout.UserFrom(o.Environ).Config
}

// ProjectConfigDir is ProjectDir/.weave, or "" without a project.
func (o Options) ProjectConfigDir() string {
	if o.ProjectDir == "" {
		return ""
	}
	return layout.NewProject(o.ProjectDir).Dir()
}

// configNames are the file names looked for in a config directory; the
// extension picks the format.
var configNames = []string{"config.yaml", "config.yml", "config.json", "config.toml"}

// Load reads every layer, validates each value where it was written, and
// returns the effective config and where each value came from. All problems
// are reported together, joined; each is a *FieldError or names its file.
func Load(opts Options) (*Config, *Sources, error) {
	return load(opts, opts.UserDir())
}

// Default returns the config of built-in defaults alone.
func Default() *Config {
	c, _, err := load(Options{}, "")
	if err != nil {
		// The defaults are fixed at compile time and covered by tests.
		panic(fmt.Sprintf("config: built-in defaults are invalid: %v", err))
	}
	return c
}

func load(opts Options, userDir string) (*Config, *Sources, error) {
	var errs []error
	src := &Sources{byKey: map[string]Source{}}
	sec := newSections()

	// A fresh viper per load: no global state, so loads never leak into
	// each other and tests may run in parallel.
	v := viper.New()
	byName := map[string]Key{}
	for _, k := range keyTable() {
		byName[k.Name] = k
		if isScalar(k.Kind) {
			v.SetDefault(k.Name, k.Default)
		}
	}

	layers := []struct {
		layer Layer
		dir   string
	}{{LayerUser, userDir}, {LayerProject, opts.ProjectConfigDir()}}
	for _, l := range layers {
		if l.dir == "" {
			continue
		}
		path, err := findFile(l.dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if path == "" {
			continue
		}
		raw, err := readFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		src.files = append(src.files, path)
		el := &errorList{layer: l.layer, origin: path}
		scalars, part := parseLayer(el, byName, raw)
		errs = append(errs, el.errs...)
		if err := v.MergeConfigMap(nest(scalars)); err != nil {
			errs = append(errs, fmt.Errorf("merge %s: %w", path, err))
		}
		for k := range scalars {
			src.set(k, l.layer, path)
		}
		sec.merge(part, l.layer, path, src)
	}

	if opts.Environ != nil {
		env := environMap(opts.Environ)
		for _, k := range keyTable() {
			if !isScalar(k.Kind) {
				continue
			}
			name := envName(k.Name)
			raw, ok := env[name]
			if !ok || raw == "" {
				continue
			}
			el := &errorList{layer: LayerEnv, origin: name}
			if val, ok := convertKey(el, k, raw); ok {
				v.Set(k.Name, val)
				src.set(k.Name, LayerEnv, name)
			}
			errs = append(errs, el.errs...)
		}
	}

	flagKeys := make([]string, 0, len(opts.Flags))
	for k := range opts.Flags {
		flagKeys = append(flagKeys, k)
	}
	slices.Sort(flagKeys)
	for _, name := range flagKeys {
		el := &errorList{layer: LayerFlag, origin: name}
		k, ok := byName[name]
		if !ok || !isScalar(k.Kind) {
			el.add("", "no such setting%s", didYouMean(name, scalarNames()))
			errs = append(errs, el.errs...)
			continue
		}
		if val, ok := convertKey(el, k, opts.Flags[name]); ok {
			v.Set(k.Name, val)
			src.set(k.Name, LayerFlag, name)
		}
		errs = append(errs, el.errs...)
	}

	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}

	var c Config
	if err := v.Unmarshal(&c); err != nil {
		return nil, nil, fmt.Errorf("decode config: %w", err)
	}
	sec.apply(&c)
	if err := crossCheck(&c, src); err != nil {
		return nil, nil, err
	}
	if err := checkRoles(&c, src); err != nil {
		return nil, nil, err
	}
	if err := checkModels(&c, src); err != nil {
		return nil, nil, err
	}
	return &c, src, nil
}

// crossCheck validates rules that span keys, blaming the key set in the
// higher layer (the more recent change).
func crossCheck(c *Config, src *Sources) error {
	if c.Model.Provider != "none" && c.Model.Name == "" {
		l, o := src.Of("model.provider")
		return &FieldError{Layer: l, Origin: o, Key: "model.provider", Problem: fmt.Sprintf(
			"%s needs a model: set model.name (or WEAVE_MODEL_NAME) too, e.g. %s", c.Model.Provider, exampleModel(c.Model.Provider))}
	}
	if c.ContextWindow.WarnRatio < c.ContextWindow.CompactRatio {
		return nil
	}
	const warn, compact = "context_window.warn_ratio", "context_window.compact_ratio"
	wl, wo := src.Of(warn)
	cl, co := src.Of(compact)
	if cl.rank() > wl.rank() {
		return &FieldError{Layer: cl, Origin: co, Key: compact, Problem: fmt.Sprintf(
			"%v must be above %s (%v, from %s)", c.ContextWindow.CompactRatio, warn, c.ContextWindow.WarnRatio, describeSource(wl, wo))}
	}
	return &FieldError{Layer: wl, Origin: wo, Key: warn, Problem: fmt.Sprintf(
		"%v must be below %s (%v, from %s)", c.ContextWindow.WarnRatio, compact, c.ContextWindow.CompactRatio, describeSource(cl, co))}
}

// convertKey converts and checks one scalar value, reporting into el.
func convertKey(el *errorList, k Key, raw any) (any, bool) {
	val, problem := convert(k.Kind, raw)
	if problem == "" && len(k.Allowed) > 0 && !slices.Contains(k.Allowed, val.(string)) {
		problem = oneOf(val.(string), k.Allowed)
	}
	if problem == "" && k.check != nil {
		problem = k.check(val)
	}
	if problem != "" {
		el.add(k.Name, "%s", problem)
		return nil, false
	}
	return val, true
}

func didYouMean(name string, known []string) string {
	if s := suggest(name, known); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

func isScalar(k Kind) bool { return k != KindMap && k != KindList }

func scalarNames() []string {
	var out []string
	for _, k := range keyTable() {
		if isScalar(k.Kind) {
			out = append(out, k.Name)
		}
	}
	return out
}

// environMap reads os.Environ() form; a later entry wins, as in the OS.
func environMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// nest turns {"a.b": 1} into {"a": {"b": 1}} for viper.
func nest(flat map[string]any) map[string]any {
	out := map[string]any{}
	for k, val := range flat {
		parts := strings.Split(k, ".")
		m := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = val
	}
	return out
}
