package hooks

import (
	"time"

	"github.com/weavehq/weave/plugins"
)

// BuiltinVersion is the version the built-in hooks report.
const BuiltinVersion = "1"

// Priorities of the built-in hooks. Guards run last on an event so they judge
// the final arguments, after every modification.
const (
	PriorityContext = 100
	PriorityGuard   = 1000
)

// BuiltinConfig holds the config values of the built-in hooks.
type BuiltinConfig struct {
	// ProjectDir is used when an event carries no cwd.
	ProjectDir string
	// Plans reads plans and state; nil means NewPlansSource().
	Plans PlanSource
	// WorkContinuation turns the work-continuation hook on in every
	// session (work_continuation.enabled); without it, the hook nudges
	// only in start-work runs (see StartWorkRunKey), where the person asked
	// for the plan to be run.
	WorkContinuation bool
	// MaxNudges is how many continuation prompts without progress pause a
	// plan; zero means 3.
	MaxNudges int
	// ContextWarnRatio and ContextCompactRatio are the context-window
	// thresholds; zero means 0.80 and 0.95.
	ContextWarnRatio    float64
	ContextCompactRatio float64
	// PatternAgent is the agent the md-only guard restricts; empty means
	// "pattern".
	PatternAgent string
	// Timeout bounds each built-in hook; zero means the pipeline default.
	Timeout time.Duration
	// InstructionFiles are the instruction file names the rules injector
	// looks for in a folder, the first found winning (instructions.files);
	// nil means AGENTS.md, then CLAUDE.md.
	InstructionFiles []string
}

// BuiltinHooks returns the built-in hooks configured by cfg, in no
// particular order (the pipeline orders them). A built-in hook that handles
// session.end does so only to forget what the session's earlier calls taught
// it, so a host may skip session.end for a built-in it never called.
func BuiltinHooks(cfg BuiltinConfig) []Registered {
	src := cfg.Plans
	if src == nil {
		src = NewPlansSource()
	}
	hs := []interface {
		plugins.Hook
		registered() Registered
	}{
		NewStartWork(cfg.ProjectDir),
		NewPatternMDOnly(cfg.PatternAgent, cfg.ProjectDir),
		NewKeywordDetector(),
		NewContextWindowMonitor(cfg.ContextWarnRatio, cfg.ContextCompactRatio),
		NewRulesInjector(cfg.ProjectDir, cfg.InstructionFiles...),
		NewWriteGuard(cfg.ProjectDir),
		NewVerificationReminder(src, cfg.ProjectDir),
		newWorkContinuation(src, cfg.ProjectDir, cfg.MaxNudges, cfg.WorkContinuation),
	}
	out := make([]Registered, 0, len(hs))
	for _, h := range hs {
		r := h.registered()
		r.Timeout = cfg.Timeout
		out = append(out, r)
	}
	return out
}

// builtinInfo describes a built-in hook.
func builtinInfo(name string, priority int, events ...string) plugins.Info {
	return plugins.Info{Name: name, Version: BuiltinVersion, Kind: plugins.KindHook, Events: events, Priority: priority}
}

func builtinRegistered(h plugins.Hook, info plugins.Info, fail FailPolicy) Registered {
	return Registered{Hook: h, Info: info, Fail: fail, Source: SourceBuiltin}
}

var allow = plugins.Decision{Action: plugins.Allow}

func withContext(s string) plugins.Decision {
	return plugins.Decision{Action: plugins.Allow, Context: s}
}

func block(reason string) plugins.Decision {
	return plugins.Decision{Action: plugins.Block, Reason: reason}
}
