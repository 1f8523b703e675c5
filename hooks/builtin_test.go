package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

// memPlans is an in-memory PlanSource; plans are listed newest first.
type memPlans struct {
	mu    sync.Mutex
	plans []PlanInfo
	state WorkState
	err   error
}

func (m *memPlans) Find(_ context.Context, _, name string) (PlanInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return PlanInfo{}, m.err
	}
	for _, p := range m.plans {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
	}
	for _, p := range m.plans {
		if strings.Contains(strings.ToLower(p.Name), strings.ToLower(name)) {
			return p, nil
		}
	}
	return PlanInfo{}, fmt.Errorf("%w: %q", ErrNoPlan, name)
}

func (m *memPlans) Discover(context.Context, string) ([]PlanInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]PlanInfo(nil), m.plans...), m.err
}

func (m *memPlans) Plan(_ context.Context, path string) (PlanInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return PlanInfo{}, m.err
	}
	for _, p := range m.plans {
		if p.Path == path {
			return p, nil
		}
	}
	return PlanInfo{}, fmt.Errorf("read plan %s: file does not exist", path)
}

func (m *memPlans) State(context.Context, string) (WorkState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.err
}

// setProgress sets the progress of the named plan.
func (m *memPlans) setProgress(name string, completed int, next *plugins.TaskRef) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.plans {
		if m.plans[i].Name == name {
			m.plans[i].Completed = completed
			m.plans[i].Next = next
		}
	}
}

func plan(name string, completed, total int) PlanInfo {
	p := PlanInfo{Name: name, Path: "/p/.weave/plans/" + name + ".md", Completed: completed, Total: total}
	if completed < total {
		p.Next = &plugins.TaskRef{Number: completed + 1, Title: fmt.Sprintf("Task %d", completed+1)}
	}
	return p
}

// planFile renders a plan with done of total tasks ticked.
func planFile(done, total int) string {
	var b strings.Builder
	b.WriteString("# Plan\n\n## TODOs\n\n")
	for i := 1; i <= total; i++ {
		mark := " "
		if i <= done {
			mark = "x"
		}
		fmt.Fprintf(&b, "- [%s] %d. Task %d\n", mark, i, i)
	}
	return b.String()
}

// startWorkProject writes plans (name -> done/total) oldest first, so that
// the last one listed is the newest, and an optional state naming active.
func startWorkProject(t *testing.T, ps [][3]any, active string) string {
	t.Helper()
	dir := t.TempDir()
	plansDir := filepath.Join(dir, ".weave", "plans")
	if err := os.MkdirAll(plansDir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour)
	for i, p := range ps {
		path := filepath.Join(plansDir, p[0].(string)+".md")
		if err := os.WriteFile(path, []byte(planFile(p[1].(int), p[2].(int))), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(path, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	if active != "" {
		st := &plans.State{SchemaVersion: 1, ActivePlan: filepath.Join(plansDir, active+".md"), PlanName: active}
		if err := plans.NewStore(filepath.Join(dir, ".weave")).Save(st); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestStartWork(t *testing.T) {
	oauth := [3]any{"oauth2-login", 3, 5}
	dark := [3]any{"dark-mode", 0, 2}
	done := [3]any{"setup", 4, 4}
	modify := func(name, mode string, completed, total int, ctx string) plugins.Decision {
		return plugins.Decision{Action: plugins.Modify, Args: map[string]any{"plan_path": "<project>/.weave/plans/" + name + ".md", "plan_name": name, "mode": mode, "completed": completed, "total": total}, Context: ctx}
	}
	tests := []struct {
		name   string
		plans  [][3]any
		active string
		args   string
		want   plugins.Decision
		// blockHas is a piece of the block reason.
		blockHas string
	}{
		{name: "name: exact match", plans: [][3]any{dark, oauth}, args: "OAuth2-Login",
			want: modify("oauth2-login", "start", 3, 5, "Starting plan oauth2-login: 3/5 tasks done. Continue from the first unchecked task: 4. Task 4")},
		{name: "name: substring", plans: [][3]any{dark, oauth}, args: "dark",
			want: modify("dark-mode", "start", 0, 2, "Starting plan dark-mode: 0/2 tasks done. Continue from the first unchecked task: 1. Task 1")},
		{name: "name: the active plan resumes", plans: [][3]any{dark, oauth}, active: "oauth2-login", args: "oauth2-login",
			want: modify("oauth2-login", "resume", 3, 5, "Resuming plan oauth2-login: 3/5 tasks done. Continue from the first unchecked task: 4. Task 4")},
		{name: "name: complete", plans: [][3]any{done, oauth}, args: "setup", blockHas: `plan "setup" is already complete (4/4 tasks)`},
		{name: "name: not found lists the incomplete plans", plans: [][3]any{dark, done, oauth}, args: "auth-v2", blockHas: `no plan named "auth-v2"`},
		{name: "name: not found, no plans", args: "x", blockHas: `no plan named "x" in .weave/plans (no incomplete plans)`},
		{name: "no name: resume the active plan", plans: [][3]any{oauth, dark}, active: "oauth2-login",
			want: modify("oauth2-login", "resume", 3, 5, "Resuming plan oauth2-login: 3/5 tasks done. Continue from the first unchecked task: 4. Task 4")},
		{name: "no name: active plan complete, sole incomplete plan starts", plans: [][3]any{done, dark}, active: "setup",
			want: modify("dark-mode", "start", 0, 2, "Starting plan dark-mode: 0/2 tasks done. Continue from the first unchecked task: 1. Task 1")},
		{name: "no name: active plan vanished", plans: [][3]any{dark}, active: "gone",
			want: modify("dark-mode", "start", 0, 2, "Starting plan dark-mode: 0/2 tasks done. Continue from the first unchecked task: 1. Task 1")},
		{name: "no name: several incomplete", plans: [][3]any{dark, done, oauth}, blockHas: "more than one plan could run"},
		{name: "no name: all complete", plans: [][3]any{done}, blockHas: "every plan is complete"},
		{name: "no name: no plans", blockHas: "no plans in .weave/plans"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			project := startWorkProject(t, tt.plans, tt.active)
			got, err := NewStartWork(project).Handle(context.Background(), plugins.Event{Name: plugins.EventCommandExecuteBefore, Command: "start-work", Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			if tt.blockHas != "" {
				if got.Action != plugins.Block || !strings.Contains(got.Reason, tt.blockHas) {
					t.Fatalf("Handle(start-work %q) = %s %q, want a block saying %q", tt.args, got.Action, got.Reason, tt.blockHas)
				}
				return
			}
			if p, ok := got.Args["plan_path"].(string); ok {
				got.Args["plan_path"] = strings.Replace(p, project, "<project>", 1)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Handle(start-work %q) mismatch (-want +got):\n%s", tt.args, diff)
			}
		})
	}
	t.Run("other commands pass", func(t *testing.T) {
		got := handle(t, NewStartWork(t.TempDir()), plugins.Event{Name: plugins.EventCommandExecuteBefore, Command: "status"})
		if got.Action != plugins.Allow {
			t.Errorf("Handle(status) = %s, want allow", got.Action)
		}
	})
	t.Run("failure blocks the start", func(t *testing.T) {
		// No .weave/plans at all: resolving fails, and the hook fails closed.
		out, err := RunOne(context.Background(), NewStartWork(t.TempDir()).registered(),
			plugins.Event{Name: plugins.EventCommandExecuteBefore, Command: "start-work"})
		if err != nil {
			t.Fatal(err)
		}
		if !out.Blocked() || !strings.Contains(out.Reason, "weave init") {
			t.Errorf("RunOne() = %s %q, want a block naming the failure", out.Action, out.Reason)
		}
	})
}

func idle(session string) plugins.Event {
	return plugins.Event{Name: plugins.EventSessionIdle, SessionID: session, Cwd: "/p"}
}

func TestWorkContinuation(t *testing.T) {
	type step struct {
		ev       plugins.Event
		progress int // -1: leave as is
		want     plugins.Decision
	}
	oauth := plan("oauth2-login", 3, 5)
	nudge := func(done, next int) plugins.Decision {
		return withContext(fmt.Sprintf("Active work: oauth2-login, %d/5 tasks done. Continue from the first unchecked task: %d. Task %d", done, next, next))
	}
	tests := []struct {
		name  string
		state WorkState
		steps []step
	}{
		{
			name:  "three nudges without progress, then pause once, then silence",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}},
			steps: []step{
				{idle("s1"), -1, nudge(3, 4)},
				{idle("s1"), -1, nudge(3, 4)},
				{idle("s1"), -1, nudge(3, 4)},
				{idle("s1"), -1, block("paused plan oauth2-login at 3/5 tasks: 3 continuation prompts without progress; run `weave start-work` to resume")},
				{idle("s1"), -1, allow},
				{idle("s1"), 4, allow},
			},
		},
		{
			name:  "progress resets the count",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}},
			steps: []step{
				{idle("s1"), -1, nudge(3, 4)},
				{idle("s1"), -1, nudge(3, 4)},
				{idle("s1"), -1, nudge(3, 4)},
				{idle("s1"), 4, nudge(4, 5)},
				{idle("s1"), -1, nudge(4, 5)},
				{idle("s1"), -1, nudge(4, 5)},
				{idle("s1"), -1, block("paused plan oauth2-login at 4/5 tasks: 3 continuation prompts without progress; run `weave start-work` to resume")},
			},
		},
		{
			name:  "a user message pauses; start-work re-arms",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}},
			steps: []step{
				{idle("s1"), -1, nudge(3, 4)},
				{plugins.Event{Name: plugins.EventChatMessage, SessionID: "s1", Message: "wait, stop"}, -1, allow},
				{idle("s1"), -1, block("paused plan oauth2-login at 3/5 tasks: the user sent a message; run `weave start-work` to resume")},
				{idle("s1"), -1, allow},
				{plugins.Event{Name: plugins.EventCommandExecuteBefore, SessionID: "s1", Command: "start-work"}, -1, allow},
				{idle("s1"), -1, nudge(3, 4)},
			},
		},
		{
			name:  "the host's own continuation message is not a user message",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}},
			steps: []step{
				{plugins.Event{Name: plugins.EventChatMessage, SessionID: "s1", Message: "Active work...", Data: map[string]any{"source": "continuation"}}, -1, allow},
				{idle("s1"), -1, nudge(3, 4)},
			},
		},
		{
			name:  "an interrupt pauses",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}},
			steps: []step{
				{plugins.Event{Name: plugins.EventSessionIdle, SessionID: "s1", Cwd: "/p", Data: map[string]any{"interrupted": true}}, -1,
					block("paused plan oauth2-login at 3/5 tasks: the user interrupted; run `weave start-work` to resume")},
				{idle("s1"), -1, allow},
			},
		},
		{
			name:  "only the owning session is nudged",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}},
			steps: []step{
				{idle("s2"), -1, allow},
				{idle("s1"), -1, nudge(3, 4)},
			},
		},
		{
			name:  "the count starts from state.json after a restart",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}, Continuation: plans.Continuation{Nudges: 2, Completed: 3}},
			steps: []step{
				{idle("s1"), -1, nudge(3, 4)},
				{idle("s1"), -1, block("paused plan oauth2-login at 3/5 tasks: 3 continuation prompts without progress; run `weave start-work` to resume")},
			},
		},
		{
			name:  "a count from before progress does not count",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}, Continuation: plans.Continuation{Nudges: 3, Completed: 2}},
			steps: []step{{idle("s1"), -1, nudge(3, 4)}},
		},
		{
			name:  "continuation stopped in state.json (a person's message): pause, no nudge",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}, Continuation: plans.Continuation{Stopped: "the person sent a message"}},
			steps: []step{
				{idle("s1"), -1, block("paused plan oauth2-login at 3/5 tasks: the person sent a message; run `weave start-work` to resume")},
				{idle("s1"), -1, allow},
			},
		},
		{
			name:  "paused state: no nudge",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}, Paused: true},
			steps: []step{{idle("s1"), -1, allow}},
		},
		{
			name:  "no active plan: no nudge",
			state: WorkState{SessionIDs: []string{"s1"}},
			steps: []step{{idle("s1"), -1, allow}},
		},
		{
			name:  "complete plan: no nudge",
			state: WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}},
			steps: []step{{idle("s1"), 5, allow}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &memPlans{plans: []PlanInfo{oauth}, state: tt.state}
			h := NewWorkContinuation(src, "", 0)
			for i, s := range tt.steps {
				if s.progress >= 0 {
					var next *plugins.TaskRef
					if s.progress < 5 {
						next = &plugins.TaskRef{Number: s.progress + 1, Title: fmt.Sprintf("Task %d", s.progress+1)}
					}
					src.setProgress("oauth2-login", s.progress, next)
				}
				got := handle(t, h, s.ev)
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Fatalf("step %d (%s): mismatch (-want +got):\n%s", i+1, s.ev.Name, diff)
				}
			}
		})
	}
}

// Continuation is opt-in for chat sessions (work_continuation.enabled) and
// on in start-work runs, where the person asked for the plan to be run.
func TestWorkContinuationIsOptInOutsideStartWork(t *testing.T) {
	oauth := plan("oauth2-login", 3, 5)
	state := WorkState{ActivePlan: oauth.Path, SessionIDs: []string{"s1"}}
	runIdle := idle("s1")
	runIdle.Data = map[string]any{StartWorkRunKey: true}
	for _, tt := range []struct {
		enabled bool
		ev      plugins.Event
		nudge   bool
	}{
		{false, idle("s1"), false},
		{false, runIdle, true},
		{true, idle("s1"), true},
	} {
		var hook plugins.Hook
		for _, r := range BuiltinHooks(BuiltinConfig{Plans: &memPlans{plans: []PlanInfo{oauth}, state: state}, WorkContinuation: tt.enabled}) {
			if r.Info.Name == WorkContinuationID {
				hook = r.Hook
			}
		}
		if hook == nil {
			t.Fatalf("BuiltinHooks(enabled %v) lacks %s", tt.enabled, WorkContinuationID)
		}
		got := handle(t, hook, tt.ev)
		if nudged := got.Context != ""; nudged != tt.nudge {
			t.Errorf("enabled %v, data %v: decision %+v, want a nudge: %v", tt.enabled, tt.ev.Data, got, tt.nudge)
		}
	}
}

func TestVerificationReminder(t *testing.T) {
	src := &memPlans{plans: []PlanInfo{plan("oauth2-login", 5, 7)}}
	h := NewVerificationReminder(src, "/p")
	todosDone := func(planRef string, open int) plugins.Event {
		// As over the wire: numbers are float64.
		return plugins.Event{Name: plugins.EventPlanTodosDone, Plan: planRef,
			Data: map[string]any{"completed": float64(5), "total": float64(7), "todos": float64(5), "verification": float64(open)}}
	}
	if got := handle(t, h, todosDone("oauth2-login", 0)); cmp.Diff(allow, got) != "" {
		t.Errorf("Handle(no Verification item open) = %+v, want allow without context", got)
	}
	want := withContext("All 5 tasks of oauth2-login are done. Before reporting it finished, run every check in the plan's ## Verification section and report each result; fix anything that fails.")
	if got := handle(t, h, todosDone("/p/.weave/plans/oauth2-login.md", 2)); cmp.Diff(want, got) != "" {
		t.Errorf("Handle(TODOs done, 2 checks open) = %+v, want %+v", got, want)
	}
	if got := handle(t, h, todosDone("oauth2-login", 2)); cmp.Diff(allow, got) != "" {
		t.Errorf("Handle(same plan, second time) = %+v, want allow (once only)", got)
	}
	if got := handle(t, h, todosDone("no-such-plan", 1)); cmp.Diff(allow, got) != "" {
		t.Errorf("Handle(unknown plan) = %+v, want allow", got)
	}
	// An event without counts (a sample event file) still reminds.
	h = NewVerificationReminder(src, "/p")
	if got := handle(t, h, plugins.Event{Name: plugins.EventPlanTodosDone, Plan: "oauth2-login"}); got.Context == "" {
		t.Errorf("Handle(event without data) = %+v, want the reminder", got)
	}
}

func TestKeywordDetector(t *testing.T) {
	tests := []struct {
		msg    string
		data   map[string]any
		inject bool
	}{
		{"ultrawork on the auth plan", nil, true},
		{"ULW", nil, true},
		{"please, ulw.", nil, true},
		{"UltraWork!", nil, true},
		{"ulwx is not it", nil, false},
		{"ultraworker", nil, false},
		{"my_ulw_var", nil, false},
		{"nothing special", nil, false},
		{"ultrawork", map[string]any{"source": "continuation"}, false},
	}
	h := NewKeywordDetector()
	for _, tt := range tests {
		got := handle(t, h, plugins.Event{Name: plugins.EventChatMessage, Message: tt.msg, Data: tt.data})
		if (got.Context == UltraworkInstruction) != tt.inject || got.Action != plugins.Allow {
			t.Errorf("Handle(%q) = %+v, want inject=%v", tt.msg, got, tt.inject)
		}
	}
}

func TestContextWindowMonitor(t *testing.T) {
	h := NewContextWindowMonitor(0, 0)
	use := func(session string, used, window any) string {
		t.Helper()
		return handle(t, h, plugins.Event{Name: plugins.EventChatMessage, SessionID: session, Data: map[string]any{"tokens_used": used, "context_window": window}}).Context
	}
	steps := []struct {
		session string
		used    any
		want    string // "" none, "warn", "compact"
	}{
		{"s1", 50000.0, ""},
		{"s1", 162000.0, "warn"},
		{"s1", 170000.0, ""},
		{"s1", 192000, "compact"},
		{"s1", 199000.0, ""},
		{"s2", 195000.0, "compact"},
		{"s2", 170000.0, ""},
		{"s1", "lots", ""},
	}
	for i, s := range steps {
		got := use(s.session, s.used, 200000.0)
		kind := ""
		switch {
		case strings.Contains(got, "is being compacted"):
			kind = "compact"
		case strings.Contains(got, "Be economical"):
			kind = "warn"
		case got != "":
			kind = "other: " + got
		}
		if kind != s.want {
			t.Errorf("step %d: %s at %v/200000 gave %q, want %q", i+1, s.session, s.used, kind, s.want)
		}
	}
	if got := use("s1", 162000.0, 200000.0); got != "" {
		t.Errorf("warn again before compaction: %q", got)
	}
	handle(t, h, plugins.Event{Name: plugins.EventSessionCompacted, SessionID: "s1"})
	if got := use("s1", 164000.0, 200000.0); !strings.Contains(got, "82% full (164000 of 200000 tokens)") {
		t.Errorf("after compaction, 82%% gave %q, want a warning with the figures", got)
	}
	t.Run("configured thresholds", func(t *testing.T) {
		h := NewContextWindowMonitor(0.5, 0.6)
		got := handle(t, h, plugins.Event{Name: plugins.EventChatMessage, SessionID: "s", Data: map[string]any{"tokens_used": 55, "context_window": 100}})
		if !strings.Contains(got.Context, "55% full") {
			t.Errorf("Handle(55/100, warn 0.5) = %q, want a warning", got.Context)
		}
	})
}

func TestRulesInjector(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "project")
	tree(t, base, map[string]string{
		"AGENTS.md":                   "outside rules",
		"project/AGENTS.md":           "root rules",
		"project/main.go":             "x",
		"project/svc/CLAUDE.md":       "svc claude",
		"project/svc/AGENTS.md":       "svc agents",
		"project/svc/deep/AGENTS.md":  "deep agents",
		"project/svc/deep/er/file.go": "x",
		"project/svc/deep/er/two.go":  "x",
		"project/lib/CLAUDE.md":       "lib claude",
		"project/lib/x.go":            "x",
		"elsewhere/y.go":              "x",
		"project/leak/AGENTS.md":      "->../../AGENTS.md",
	})
	h := NewRulesInjector("")
	call := func(session, tool, path string, res *plugins.ToolResult) string {
		t.Helper()
		return handle(t, h, plugins.Event{Name: plugins.EventToolExecuteAfter, SessionID: session, Cwd: project, Tool: tool, Args: map[string]any{"path": path}, Result: res}).Context
	}
	steps := []struct {
		session, tool, path string
		res                 *plugins.ToolResult
		want                []string
		notWant             []string
	}{
		{"s1", plugins.ToolRead, "svc/deep/er/file.go", &plugins.ToolResult{IsError: true}, nil, []string{"rules", "agents"}},
		// Every folder on the way, outermost first; AGENTS.md before
		// CLAUDE.md in one folder; the root's is in the system prompt.
		{"s1", plugins.ToolRead, "svc/deep/er/file.go", nil, []string{"Rules from svc/AGENTS.md", "svc agents", "Rules from svc/deep/AGENTS.md", "deep agents"}, []string{"root rules", "svc claude"}},
		{"s1", plugins.ToolRead, "svc/deep/er/two.go", nil, nil, []string{"agents"}},
		{"s1", plugins.ToolEdit, "lib/x.go", nil, []string{"Rules from lib/CLAUDE.md", "lib claude"}, []string{"outside rules"}},
		{"s1", plugins.ToolRead, "main.go", nil, nil, []string{"rules"}},
		{"s2", plugins.ToolWrite, filepath.Join(project, "svc", "new.go"), nil, []string{"svc agents"}, []string{"deep"}},
		{"s2", plugins.ToolRead, "../elsewhere/y.go", nil, nil, []string{"rules"}},
		{"s2", plugins.ToolRead, "leak/f.go", nil, nil, []string{"outside rules"}},
		{"s2", plugins.ToolGrep, "lib/x.go", nil, nil, []string{"lib claude"}},
	}
	for i, s := range steps {
		got := call(s.session, s.tool, s.path, s.res)
		for _, w := range s.want {
			if !strings.Contains(got, w) {
				t.Errorf("step %d: %s %s (%s) context %q lacks %q", i+1, s.tool, s.path, s.session, got, w)
			}
		}
		for _, w := range s.notWant {
			if strings.Contains(got, w) {
				t.Errorf("step %d: %s %s (%s) context %q should not hold %q", i+1, s.tool, s.path, s.session, got, w)
			}
		}
	}
	if got := call("s1", plugins.ToolRead, "svc/x.go", nil); got != "" {
		t.Errorf("svc again in s1 gave %q, want nothing", got)
	}
	handle(t, h, plugins.Event{Name: plugins.EventSessionEnd, SessionID: "s1"})
	if got := call("s1", plugins.ToolRead, "svc/x.go", nil); !strings.Contains(got, "svc agents") {
		t.Errorf("after session end, read svc/x.go gave %q, want svc's rules again", got)
	}
	// Config names the files: CLAUDE.md alone.
	only := NewRulesInjector("", "CLAUDE.md")
	got := handle(t, only, plugins.Event{Name: plugins.EventToolExecuteAfter, SessionID: "s", Cwd: project, Tool: plugins.ToolRead, Args: map[string]any{"path": "svc/x.go"}}).Context
	if !strings.Contains(got, "svc claude") || strings.Contains(got, "svc agents") {
		t.Errorf("with names [CLAUDE.md], context %q, want svc/CLAUDE.md alone", got)
	}
}

func TestBuiltinHooksRegister(t *testing.T) {
	regs := BuiltinHooks(BuiltinConfig{Plans: &memPlans{}, WorkContinuation: true})
	p, err := NewPipeline(regs, Options{})
	if err != nil {
		t.Fatalf("NewPipeline(builtins): %v", err)
	}
	var got []string
	for _, r := range p.Hooks() {
		got = append(got, fmt.Sprintf("%s %d %s", r.Info.Name, r.Info.Priority, r.Fail))
		if info, err := r.Hook.Info(context.Background()); err != nil || cmp.Diff(r.Info, info) != "" {
			t.Errorf("%s: Info() = %+v, %v; want %+v", r.Info.Name, info, err, r.Info)
		}
		if r.Source != SourceBuiltin {
			t.Errorf("%s: Source = %q, want builtin", r.Info.Name, r.Source)
		}
	}
	want := []string{
		"weave.context-window-monitor 100 ",
		"weave.keyword-detector 100 ",
		"weave.rules-injector 100 ",
		"weave.start-work 100 closed",
		"weave.verification-reminder 100 ",
		"weave.work-continuation 100 ",
		"weave.pattern-md-only 1000 closed",
		"weave.write-existing-file-guard 1000 closed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("built-in hooks in run order (-want +got):\n%s", diff)
	}
}

func TestList(t *testing.T) {
	cmds, err := CommandHooks([]CommandSpec{{Name: "fmt", Event: "PostToolUse", Matcher: "Write|Edit", Command: "gofmt -w"}}, CommandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	regs := append(BuiltinHooks(BuiltinConfig{Plans: &memPlans{}}), cmds...)
	got := List(regs, Options{DisabledHooks: []string{KeywordDetectorID}})
	if len(got) != len(regs) {
		t.Fatalf("List() has %d rows, want %d", len(got), len(regs))
	}
	byName := map[string]Listing{}
	for _, l := range got {
		byName[l.Name] = l
	}
	wantFmt := Listing{Name: "fmt", Version: "command", Source: SourceCommand, Events: []string{plugins.EventToolExecuteAfter},
		Tools:   map[string][]string{plugins.EventToolExecuteAfter: {plugins.ToolWrite, plugins.ToolEdit}},
		Timeout: DefaultCommandTimeout, Fail: "open", Detail: "PostToolUse[Write|Edit]: gofmt -w"}
	if diff := cmp.Diff(wantFmt, byName["fmt"]); diff != "" {
		t.Errorf("List() fmt row (-want +got):\n%s", diff)
	}
	if got, want := byName["fmt"].EventLabels(), []string{"tool.execute.after[write|edit]"}; !slices.Equal(got, want) {
		t.Errorf("EventLabels() = %q, want %q", got, want)
	}
	if !byName[KeywordDetectorID].Disabled {
		t.Errorf("List() does not mark %s disabled", KeywordDetectorID)
	}
	if l := byName[ContextWindowMonitorID]; l.Fail != "default" || l.Timeout != DefaultTimeout {
		t.Errorf("List() %s = fail %q timeout %s, want default and %s", l.Name, l.Fail, l.Timeout, DefaultTimeout)
	}
	if got[0].Name != "fmt" {
		t.Errorf("List()[0] = %s, want the priority-0 command hook first", got[0].Name)
	}
}

func TestVerificationReminderIsCalledOncePerPlan(t *testing.T) {
	// The reminder handles the event a run fires once a plan, not the one
	// it fires on every task: a runbook of any size calls it once.
	info := NewVerificationReminder(&memPlans{}, "/p").info()
	if info.Handles(plugins.EventPlanTaskDone, "") || !info.Handles(plugins.EventPlanTodosDone, "") {
		t.Errorf("reminder events = %v, want plan.todos.done only", info.Events)
	}
}

// A start the host resolved already is taken as it is: nothing is read
// from disk (the project here is empty), and a start the host cannot run is
// left to the host to report.
func TestStartWorkTakesTheHostsResolution(t *testing.T) {
	h := NewStartWork(t.TempDir())
	ev := func(r Resolution) plugins.Event {
		// As over the wire: Data is JSON.
		b, _ := json.Marshal(map[string]any{ResolutionKey: r})
		var data map[string]any
		_ = json.Unmarshal(b, &data)
		return plugins.Event{Name: plugins.EventCommandExecuteBefore, Command: "start-work", Arguments: "x", Data: data}
	}
	got := handle(t, h, ev(Resolution{Verdict: "resume", PlanName: "oauth2-login", PlanPath: "/p/oauth2-login.md", Completed: 3, Total: 5, Next: &plugins.TaskRef{Number: 4, Title: "Task 4"}}))
	want := plugins.Decision{Action: plugins.Modify, Args: map[string]any{"plan_path": "/p/oauth2-login.md", "plan_name": "oauth2-login", "mode": "resume", "completed": 3, "total": 5},
		Context: "Resuming plan oauth2-login: 3/5 tasks done. Continue from the first unchecked task: 4. Task 4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Handle(resolved resume) mismatch (-want +got):\n%s", diff)
	}
	if got := handle(t, h, ev(Resolution{Verdict: "not-found"})); got.Action != plugins.Allow {
		t.Errorf("Handle(resolved not-found) = %s %q, want allow: the host reports it", got.Action, got.Reason)
	}
}
