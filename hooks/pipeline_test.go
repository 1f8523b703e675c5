package hooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/weavehq/weave/internal/textcap"
	"github.com/weavehq/weave/plugins"
)

// funcHook is an in-process hook whose behaviour is a function.
type funcHook struct {
	fn func(ctx context.Context, ev plugins.Event) (plugins.Decision, error)
}

func (f funcHook) Info(context.Context) (plugins.Info, error) { return plugins.Info{}, nil }
func (f funcHook) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	return f.fn(ctx, ev)
}

// recorder notes the order hooks are called in.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func reg(name string, prio int, fn func(ctx context.Context, ev plugins.Event) (plugins.Decision, error), events ...string) Registered {
	if len(events) == 0 {
		events = []string{plugins.EventToolExecuteBefore, plugins.EventChatMessage}
	}
	return Registered{
		Hook:   funcHook{fn: fn},
		Info:   plugins.Info{Name: name, Kind: plugins.KindHook, Events: events, Priority: prio},
		Source: SourceBuiltin,
	}
}

func decide(rec *recorder, name string, d plugins.Decision) func(context.Context, plugins.Event) (plugins.Decision, error) {
	return func(context.Context, plugins.Event) (plugins.Decision, error) {
		rec.add(name)
		return d, nil
	}
}

func toolEvent(args map[string]any) plugins.Event {
	return plugins.Event{Name: plugins.EventToolExecuteBefore, SessionID: "s1", Tool: plugins.ToolBash, Args: args}
}

// summary is the comparable part of an outcome.
type summary struct {
	Action    plugins.Action
	Reason    string
	BlockedBy string
	Args      map[string]any
	Text      string
	Context   []string
	Reports   []Report
	Ask       bool
}

func summarize(o Outcome) summary {
	return summary(o)
}

var ignoreDurations = cmpopts.IgnoreFields(Report{}, "Duration")

func TestPipelineRules(t *testing.T) {
	allow := plugins.Decision{Action: plugins.Allow}
	tests := []struct {
		name      string
		hooks     func(rec *recorder) []Registered
		opts      Options
		ev        plugins.Event
		want      summary
		wantCalls []string
	}{
		{
			name: "priority then name",
			hooks: func(rec *recorder) []Registered {
				return []Registered{
					reg("zeta", 1, decide(rec, "zeta", allow)),
					reg("beta", 5, decide(rec, "beta", allow)),
					reg("alpha", 5, decide(rec, "alpha", allow)),
					reg("omega", -3, decide(rec, "omega", allow)),
				}
			},
			ev: toolEvent(map[string]any{"command": "ls"}),
			want: summary{Action: plugins.Allow, Args: map[string]any{"command": "ls"}, Reports: []Report{
				{Hook: "omega", Source: SourceBuiltin, Action: plugins.Allow},
				{Hook: "zeta", Source: SourceBuiltin, Action: plugins.Allow},
				{Hook: "alpha", Source: SourceBuiltin, Action: plugins.Allow},
				{Hook: "beta", Source: SourceBuiltin, Action: plugins.Allow},
			}},
			wantCalls: []string{"omega", "zeta", "alpha", "beta"},
		},
		{
			name: "first block stops the walk and keeps earlier context",
			hooks: func(rec *recorder) []Registered {
				return []Registered{
					reg("a", 1, decide(rec, "a", plugins.Decision{Context: "from a"})),
					reg("b", 2, decide(rec, "b", plugins.Decision{Action: plugins.Block, Reason: "no rm", Context: "from b"})),
					reg("c", 3, decide(rec, "c", plugins.Decision{Action: plugins.Block, Reason: "later"})),
				}
			},
			ev: toolEvent(map[string]any{"command": "rm -rf /"}),
			want: summary{Action: plugins.Block, Reason: "b: no rm", BlockedBy: "b", Args: map[string]any{"command": "rm -rf /"},
				Context: []string{"from a", "from b"},
				Reports: []Report{
					{Hook: "a", Source: SourceBuiltin, Action: plugins.Allow},
					{Hook: "b", Source: SourceBuiltin, Action: plugins.Block, Reason: "no rm"},
					{Hook: "c", Source: SourceBuiltin, Skipped: true},
				}},
			wantCalls: []string{"a", "b"},
		},
		{
			name: "modifications chain and each hook sees the previous one",
			hooks: func(rec *recorder) []Registered {
				return []Registered{
					reg("a", 1, func(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
						rec.add("a saw " + ev.Args["command"].(string))
						return plugins.Decision{Action: plugins.Modify, Args: map[string]any{"command": ev.Args["command"].(string) + " -l"}}, nil
					}),
					reg("b", 2, func(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
						rec.add("b saw " + ev.Args["command"].(string))
						return plugins.Decision{Action: plugins.Modify, Args: map[string]any{"command": ev.Args["command"].(string) + " -a"}}, nil
					}),
					reg("c", 3, func(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
						rec.add("c saw " + ev.Args["command"].(string))
						return plugins.Decision{}, nil
					}),
				}
			},
			ev: toolEvent(map[string]any{"command": "ls"}),
			want: summary{Action: plugins.Modify, Args: map[string]any{"command": "ls -l -a"}, Reports: []Report{
				{Hook: "a", Source: SourceBuiltin, Action: plugins.Modify},
				{Hook: "b", Source: SourceBuiltin, Action: plugins.Modify},
				{Hook: "c", Source: SourceBuiltin, Action: plugins.Allow},
			}},
			wantCalls: []string{"a saw ls", "b saw ls -l", "c saw ls -l -a"},
		},
		{
			name: "text modification on chat.message",
			hooks: func(rec *recorder) []Registered {
				return []Registered{
					reg("upper", 1, func(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
						return plugins.Decision{Action: plugins.Modify, Text: strings.ToUpper(ev.Message)}, nil
					}),
					reg("seen", 2, func(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
						rec.add(ev.Message)
						return plugins.Decision{}, nil
					}),
				}
			},
			ev: plugins.Event{Name: plugins.EventChatMessage, Message: "hi"},
			want: summary{Action: plugins.Modify, Text: "HI", Reports: []Report{
				{Hook: "upper", Source: SourceBuiltin, Action: plugins.Modify},
				{Hook: "seen", Source: SourceBuiltin, Action: plugins.Allow},
			}},
			wantCalls: []string{"HI"},
		},
		{
			name: "modify then block: block wins",
			hooks: func(rec *recorder) []Registered {
				return []Registered{
					reg("m", 1, decide(rec, "m", plugins.Decision{Action: plugins.Modify, Args: map[string]any{"command": "x"}})),
					reg("g", 2, decide(rec, "g", plugins.Decision{Action: plugins.Block, Reason: "guard"})),
				}
			},
			ev: toolEvent(map[string]any{"command": "ls"}),
			want: summary{Action: plugins.Block, Reason: "g: guard", BlockedBy: "g", Args: map[string]any{"command": "x"}, Reports: []Report{
				{Hook: "m", Source: SourceBuiltin, Action: plugins.Modify},
				{Hook: "g", Source: SourceBuiltin, Action: plugins.Block, Reason: "guard"},
			}},
			wantCalls: []string{"m", "g"},
		},
		{
			name: "error on tool.execute.before fails closed by default",
			hooks: func(rec *recorder) []Registered {
				return []Registered{
					reg("broken", 1, func(context.Context, plugins.Event) (plugins.Decision, error) {
						return plugins.Decision{}, errors.New("plugin died")
					}),
					reg("after", 2, decide(rec, "after", allow)),
				}
			},
			ev: toolEvent(nil),
			want: summary{Action: plugins.Block, BlockedBy: "broken",
				Reason: "broken: hook broken failed (plugin died) and its failure policy is closed",
				Reports: []Report{
					{Hook: "broken", Source: SourceBuiltin, Action: plugins.Block, Reason: "hook broken failed (plugin died) and its failure policy is closed", Error: "plugin died", Policy: FailClosed},
					{Hook: "after", Source: SourceBuiltin, Skipped: true},
				}},
		},
		{
			name: "error on chat.message fails open by default and is reported",
			hooks: func(rec *recorder) []Registered {
				return []Registered{
					reg("broken", 1, func(context.Context, plugins.Event) (plugins.Decision, error) {
						return plugins.Decision{}, errors.New("plugin died")
					}),
					reg("after", 2, decide(rec, "after", allow)),
				}
			},
			ev: plugins.Event{Name: plugins.EventChatMessage, Message: "hi"},
			want: summary{Action: plugins.Allow, Text: "hi", Reports: []Report{
				{Hook: "broken", Source: SourceBuiltin, Action: plugins.Allow, Error: "plugin died", Policy: FailOpen},
				{Hook: "after", Source: SourceBuiltin, Action: plugins.Allow},
			}},
			wantCalls: []string{"after"},
		},
		{
			name: "explicit open policy on tool.execute.before",
			hooks: func(rec *recorder) []Registered {
				r := reg("broken", 1, func(context.Context, plugins.Event) (plugins.Decision, error) {
					return plugins.Decision{}, errors.New("boom")
				})
				r.Fail = FailOpen
				return []Registered{r}
			},
			ev: toolEvent(nil),
			want: summary{Action: plugins.Allow, Reports: []Report{
				{Hook: "broken", Source: SourceBuiltin, Action: plugins.Allow, Error: "boom", Policy: FailOpen},
			}},
		},
		{
			name: "explicit closed policy on chat.message",
			hooks: func(rec *recorder) []Registered {
				r := reg("guard", 1, func(context.Context, plugins.Event) (plugins.Decision, error) {
					return plugins.Decision{}, errors.New("boom")
				})
				r.Fail = FailClosed
				return []Registered{r}
			},
			ev: plugins.Event{Name: plugins.EventChatMessage},
			want: summary{Action: plugins.Block, BlockedBy: "guard", Reason: "guard: hook guard failed (boom) and its failure policy is closed", Reports: []Report{
				{Hook: "guard", Source: SourceBuiltin, Action: plugins.Block, Reason: "hook guard failed (boom) and its failure policy is closed", Error: "boom", Policy: FailClosed},
			}},
		},
		{
			name: "panic is a failure with the hook's policy",
			hooks: func(rec *recorder) []Registered {
				// The hook writes into the event's arguments, which this
				// event has none of: a runtime panic inside the hook.
				return []Registered{reg("crash", 1, func(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
					ev.Args["x"] = 1
					return plugins.Decision{}, nil
				})}
			},
			ev: toolEvent(nil),
			want: summary{Action: plugins.Block, BlockedBy: "crash",
				Reason: "crash: hook crash failed (panic: assignment to entry in nil map) and its failure policy is closed",
				Reports: []Report{{Hook: "crash", Source: SourceBuiltin, Action: plugins.Block, Panicked: true, Policy: FailClosed,
					Reason: "hook crash failed (panic: assignment to entry in nil map) and its failure policy is closed",
					Error:  "panic: assignment to entry in nil map"}}},
		},
		{
			name: "unknown action is a failure",
			hooks: func(rec *recorder) []Registered {
				return []Registered{reg("odd", 1, decide(rec, "odd", plugins.Decision{Action: "maybe"}))}
			},
			ev: plugins.Event{Name: plugins.EventChatMessage},
			want: summary{Action: plugins.Allow, Reports: []Report{
				{Hook: "odd", Source: SourceBuiltin, Action: plugins.Allow, Policy: FailOpen, Error: `unknown action "maybe" (use allow, block, modify or ask)`},
			}},
			wantCalls: []string{"odd"},
		},
		{
			name: "block without a reason gets one",
			hooks: func(rec *recorder) []Registered {
				return []Registered{reg("terse", 1, decide(rec, "terse", plugins.Decision{Action: plugins.Block}))}
			},
			ev: toolEvent(nil),
			want: summary{Action: plugins.Block, BlockedBy: "terse", Reason: "terse: blocked (the hook gave no reason)", Reports: []Report{
				{Hook: "terse", Source: SourceBuiltin, Action: plugins.Block, Reason: "blocked (the hook gave no reason)"},
			}},
			wantCalls: []string{"terse"},
		},
		{
			name: "modify without payload is allow with a note",
			hooks: func(rec *recorder) []Registered {
				return []Registered{reg("empty", 1, decide(rec, "empty", plugins.Decision{Action: plugins.Modify}))}
			},
			ev: toolEvent(map[string]any{"command": "ls"}),
			want: summary{Action: plugins.Allow, Args: map[string]any{"command": "ls"}, Reports: []Report{
				{Hook: "empty", Source: SourceBuiltin, Action: plugins.Allow, Note: "modify without args or text; treated as allow"},
			}},
			wantCalls: []string{"empty"},
		},
		{
			name: "disabled hooks do not run",
			hooks: func(rec *recorder) []Registered {
				return []Registered{
					reg("off", 1, decide(rec, "off", plugins.Decision{Action: plugins.Block, Reason: "x"})),
					reg("on", 2, decide(rec, "on", allow)),
				}
			},
			opts: Options{DisabledHooks: []string{"off", "not-there"}},
			ev:   toolEvent(nil),
			want: summary{Action: plugins.Allow, Reports: []Report{
				{Hook: "on", Source: SourceBuiltin, Action: plugins.Allow},
			}},
			wantCalls: []string{"on"},
		},
		{
			name: "hooks only see their events",
			hooks: func(rec *recorder) []Registered {
				return []Registered{
					reg("idle-only", 1, decide(rec, "idle-only", allow), plugins.EventSessionIdle),
					reg("tools", 2, decide(rec, "tools", allow), plugins.EventToolExecuteBefore),
				}
			},
			ev: toolEvent(nil),
			want: summary{Action: plugins.Allow, Reports: []Report{
				{Hook: "tools", Source: SourceBuiltin, Action: plugins.Allow},
			}},
			wantCalls: []string{"tools"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			p, err := NewPipeline(tt.hooks(rec), tt.opts)
			if err != nil {
				t.Fatalf("NewPipeline: %v", err)
			}
			got, err := p.Run(context.Background(), tt.ev)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tt.want, summarize(got), ignoreDurations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Run(%s) outcome mismatch (-want +got):\n%s", tt.ev.Name, diff)
			}
			if diff := cmp.Diff(tt.wantCalls, rec.got(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("call order mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPipelineTimeouts(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stubborn := func(context.Context, plugins.Event) (plugins.Decision, error) {
		<-release // ignores its context
		return plugins.Decision{}, nil
	}
	polite := func(ctx context.Context, _ plugins.Event) (plugins.Decision, error) {
		<-ctx.Done()
		return plugins.Decision{}, ctx.Err()
	}
	tests := []struct {
		name       string
		fn         func(context.Context, plugins.Event) (plugins.Decision, error)
		fail       FailPolicy
		event      string
		wantAction plugins.Action
	}{
		{"hook ignoring its context, guard event", stubborn, FailDefault, plugins.EventToolExecuteBefore, plugins.Block},
		{"hook honouring its context, guard event", polite, FailDefault, plugins.EventToolExecuteBefore, plugins.Block},
		{"hook ignoring its context, open event", stubborn, FailDefault, plugins.EventToolExecuteAfter, plugins.Allow},
		{"closed on an open event", polite, FailClosed, plugins.EventSessionIdle, plugins.Block},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reg("slow", 1, tt.fn, tt.event)
			r.Timeout = 20 * time.Millisecond
			r.Fail = tt.fail
			p, err := NewPipeline([]Registered{r}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Run(context.Background(), plugins.Event{Name: tt.event})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got.Action != tt.wantAction {
				t.Errorf("Run().Action = %q, want %q", got.Action, tt.wantAction)
			}
			if len(got.Reports) != 1 || !got.Reports[0].TimedOut {
				t.Fatalf("Run().Reports = %+v, want one timed-out report", got.Reports)
			}
			if want := "timed out after 20ms"; got.Reports[0].Error != want {
				t.Errorf("report error = %q, want %q", got.Reports[0].Error, want)
			}
			if tt.wantAction == plugins.Block && !strings.Contains(got.Reason, "slow") {
				t.Errorf("Run().Reason = %q, want it to name the hook", got.Reason)
			}
		})
	}
}

func TestPipelineDefaultTimeoutFromOptions(t *testing.T) {
	r := reg("slow", 1, func(ctx context.Context, _ plugins.Event) (plugins.Decision, error) {
		<-ctx.Done()
		return plugins.Decision{}, ctx.Err()
	}, plugins.EventChatMessage)
	p, err := NewPipeline([]Registered{r}, Options{DefaultTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Run(context.Background(), plugins.Event{Name: plugins.EventChatMessage})
	if err != nil {
		t.Fatal(err)
	}
	if want := "timed out after 10ms"; len(got.Reports) != 1 || got.Reports[0].Error != want {
		t.Errorf("Run().Reports = %+v, want error %q", got.Reports, want)
	}
}

// A decision's reason and context are cut at the pipeline's bounds: the
// defaults, or hook.max_reason_bytes and hook.max_context_bytes.
func TestPipelineBoundsDecisionTexts(t *testing.T) {
	long := strings.Repeat("x", 2*MaxContext)
	for _, tc := range []struct {
		name            string
		opts            Options
		reason, context int
	}{
		{"defaults", Options{}, MaxReason, MaxContext},
		{"configured", Options{MaxReason: 300, MaxContext: 2000}, 300, 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := []Registered{
				reg("ctx", 1, func(context.Context, plugins.Event) (plugins.Decision, error) {
					return plugins.Decision{Action: plugins.Allow, Context: long}, nil
				}, plugins.EventChatMessage),
				reg("guard", 2, func(context.Context, plugins.Event) (plugins.Decision, error) {
					return plugins.Decision{Action: plugins.Block, Reason: long}, nil
				}, plugins.EventChatMessage),
			}
			p, err := NewPipeline(hs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Run(context.Background(), plugins.Event{Name: plugins.EventChatMessage})
			if err != nil {
				t.Fatal(err)
			}
			// The outcome's reason names the hook that blocked.
			if want := "guard: " + textcap.Cap(long, tc.reason); got.Reason != want {
				t.Errorf("reason of %d bytes, want it cut to %d (%d bytes with the note)", len(got.Reason), tc.reason, len(want))
			}
			if want := textcap.Cap(long, tc.context); len(got.Context) != 1 || got.Context[0] != want {
				t.Errorf("context %d entries, want one cut to %d bytes", len(got.Context), tc.context)
			}
		})
	}
}

func TestPipelineCallerCancel(t *testing.T) {
	started := make(chan struct{})
	r := reg("waits", 1, func(ctx context.Context, _ plugins.Event) (plugins.Decision, error) {
		close(started)
		<-ctx.Done()
		return plugins.Decision{}, ctx.Err()
	}, plugins.EventChatMessage)
	r.Fail = FailOpen
	p, err := NewPipeline([]Registered{r}, Options{DefaultTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	got, err := p.Run(ctx, plugins.Event{Name: plugins.EventChatMessage})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() error = %v, want context.Canceled", err)
	}
	if got.Action != plugins.Block {
		t.Errorf("Run().Action = %q after cancel, want block (fail safe)", got.Action)
	}
	if len(got.Reports) != 1 || got.Reports[0].TimedOut {
		t.Errorf("Run().Reports = %+v, want one report, not a timeout", got.Reports)
	}
}

func TestPipelineUnknownEvent(t *testing.T) {
	p, err := NewPipeline(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Run(context.Background(), plugins.Event{Name: "tool.before"})
	if err == nil || !strings.Contains(err.Error(), `unknown event "tool.before"`) {
		t.Errorf("Run(tool.before) error = %v, want unknown event", err)
	}
	if got.Action != plugins.Block {
		t.Errorf("Run(tool.before).Action = %q, want block", got.Action)
	}
}

func TestNewPipelineRejects(t *testing.T) {
	ok := func(context.Context, plugins.Event) (plugins.Decision, error) { return plugins.Decision{}, nil }
	tests := []struct {
		name  string
		hooks []Registered
		want  string
	}{
		{"duplicate", []Registered{reg("a", 1, ok), reg("a", 2, ok)}, `hook "a" is registered twice`},
		{"unknown event", []Registered{reg("a", 1, ok, "tool.before")}, `unknown event "tool.before"`},
		{"no events", []Registered{{Hook: funcHook{fn: ok}, Info: plugins.Info{Name: "a"}}}, `handles no events`},
		{"no name", []Registered{reg("", 1, ok)}, `no name`},
		{"nil hook", []Registered{{Info: plugins.Info{Name: "a", Events: []string{plugins.EventChatMessage}}}}, `no implementation`},
		{"bad policy", []Registered{func() Registered { r := reg("a", 1, ok); r.Fail = "sometimes"; return r }()}, `unknown failure policy "sometimes"`},
		{"unknown tool", []Registered{func() Registered {
			r := reg("a", 1, ok)
			r.Info.Tools = map[string][]string{plugins.EventToolExecuteBefore: {"Bash"}}
			return r
		}()}, `hook "a": unknown tool "Bash"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPipeline(tt.hooks, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewPipeline() error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRunOne(t *testing.T) {
	r := reg("blocker", 1, func(context.Context, plugins.Event) (plugins.Decision, error) {
		return plugins.Decision{Action: plugins.Block, Reason: "nope"}, nil
	}, plugins.EventToolExecuteBefore)
	got, err := RunOne(context.Background(), r, toolEvent(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got.Action != plugins.Block || got.Reason != "blocker: nope" {
		t.Errorf("RunOne() = %q %q, want block %q", got.Action, got.Reason, "blocker: nope")
	}
	_, err = RunOne(context.Background(), r, plugins.Event{Name: plugins.EventChatMessage})
	if err == nil || !strings.Contains(err.Error(), "does not handle event") {
		t.Errorf("RunOne(chat.message) error = %v, want 'does not handle event'", err)
	}
}

func TestPipelineConcurrentRuns(t *testing.T) {
	r := reg("echo", 1, func(_ context.Context, ev plugins.Event) (plugins.Decision, error) {
		return plugins.Decision{Action: plugins.Modify, Args: map[string]any{"n": ev.Args["n"]}}, nil
	}, plugins.EventToolExecuteBefore)
	p, err := NewPipeline([]Registered{r}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Go(func() {
			got, err := p.Run(context.Background(), toolEvent(map[string]any{"n": i}))
			if err != nil || got.Args["n"] != i {
				errs <- fmt.Errorf("run %d: args %v err %v", i, got.Args, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A hook that names its tools is called for those tools only; a hook that
// names none is called for every tool.
func TestPipelineCallsHooksOnlyForTheirTools(t *testing.T) {
	rec := &recorder{}
	allowAll := plugins.Decision{Action: plugins.Allow}
	writes := reg("writes", 1, decide(rec, "writes", allowAll), plugins.EventToolExecuteBefore, plugins.EventToolExecuteAfter)
	writes.Info.Tools = map[string][]string{plugins.EventToolExecuteBefore: {plugins.ToolWrite}}
	every := reg("every", 2, decide(rec, "every", allowAll), plugins.EventToolExecuteBefore)
	p, err := NewPipeline([]Registered{writes, every}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		event, tool string
		want        []string
	}{
		{plugins.EventToolExecuteBefore, plugins.ToolBash, []string{"every"}},
		{plugins.EventToolExecuteBefore, plugins.ToolWrite, []string{"writes", "every"}},
		{plugins.EventToolExecuteAfter, plugins.ToolBash, []string{"writes"}},
	}
	for _, tt := range tests {
		rec.calls = nil
		out, err := p.Run(context.Background(), plugins.Event{Name: tt.event, Tool: tt.tool})
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.got(); !slices.Equal(got, tt.want) {
			t.Errorf("Run(%s %s) called %q, want %q", tt.event, tt.tool, got, tt.want)
		}
		if len(out.Reports) != len(tt.want) {
			t.Errorf("Run(%s %s) reports %+v, want one per hook called (%d)", tt.event, tt.tool, out.Reports, len(tt.want))
		}
	}
}

// quietHook is a funcHook that may say it has nothing to do with an event.
type quietHook struct {
	funcHook
	quiet bool
}

func (q quietHook) Quiet(plugins.Event) bool { return q.quiet }

// A hook that is quiet for an event is not called and allows it, reported
// as any hook that allowed; one that is not is called as usual, and a
// block after a quiet hook still wins.
func TestPipelineQuietHookAllowsWithoutCall(t *testing.T) {
	rec := &recorder{}
	quiet := reg("quiet", 10, decide(rec, "quiet", plugins.Decision{Action: plugins.Block, Reason: "called"}))
	quiet.Hook = quietHook{funcHook: funcHook{fn: decide(rec, "quiet", plugins.Decision{Action: plugins.Block, Reason: "called"})}, quiet: true}
	loud := reg("loud", 20, nil)
	loud.Hook = quietHook{funcHook: funcHook{fn: decide(rec, "loud", plugins.Decision{Action: plugins.Block, Reason: "no"})}}
	p, err := NewPipeline([]Registered{quiet, loud}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), toolEvent(map[string]any{"command": "ls"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.got(); len(got) != 1 || got[0] != "loud" {
		t.Errorf("hooks called = %v, want only loud", got)
	}
	want := summary{Action: plugins.Block, Reason: "loud: no", BlockedBy: "loud", Args: map[string]any{"command": "ls"},
		Reports: []Report{{Hook: "quiet", Source: SourceBuiltin, Action: plugins.Allow}, {Hook: "loud", Source: SourceBuiltin, Action: plugins.Block, Reason: "no"}}}
	if diff := cmp.Diff(want, summarize(out), ignoreDurations); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}
