package tools

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plugins"
)

// holdingHooks holds every call in its tool.execute.before hook, reporting
// that the call runs, until the test releases it by its path.
type holdingHooks struct {
	entered chan string // a call's path as it runs

	mu      sync.Mutex
	release map[string]chan struct{}
	// running and most count the calls of each session running now and
	// at most.
	running, most map[string]int
}

func newHoldingHooks() *holdingHooks {
	return &holdingHooks{entered: make(chan string, 100), release: map[string]chan struct{}{},
		running: map[string]int{}, most: map[string]int{}}
}

func (h *holdingHooks) gate(path string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.release[path]
	if !ok {
		c = make(chan struct{})
		h.release[path] = c
	}
	return c
}

func (h *holdingHooks) Run(ctx context.Context, ev plugins.Event) (hooks.Outcome, error) {
	if ev.Name != plugins.EventToolExecuteBefore {
		return hooks.Outcome{}, nil
	}
	path, _ := ev.Args[argPath].(string)
	h.mu.Lock()
	h.running[ev.SessionID]++
	h.most[ev.SessionID] = max(h.most[ev.SessionID], h.running[ev.SessionID])
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.running[ev.SessionID]--
		h.mu.Unlock()
	}()
	h.entered <- path
	select {
	case <-h.gate(path):
	case <-ctx.Done():
	}
	return hooks.Outcome{}, nil
}

func (h *holdingHooks) mostAtOnce(session string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.most[session]
}

// queued is how many calls of session wait for a slot.
func (t *Tools) queued(session string) int {
	t.slots.mu.Lock()
	defer t.slots.mu.Unlock()
	if ss := t.slots.sessions[session]; ss != nil {
		return len(ss.queue)
	}
	return 0
}

// waitFor waits until cond holds; the test fails after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestToolsMaxParallel has one session ask for many calls at once through
// the door: at most tools.max_parallel run, the rest run in the order they
// came as others end, a call whose context ends while it waits never runs
// and gives up its place, and another session is not held up.
func TestToolsMaxParallel(t *testing.T) {
	h := newHoldingHooks()
	env := newToolsEnv(t, func(c *config.Config) { c.Tools.MaxParallel = 2 }, h)
	caller := Caller{Agent: "loom"}
	type result struct {
		path string
		err  error
	}
	results := make(chan result, 100)
	start := func(ctx context.Context, session, path string) {
		go func() {
			_, err := env.tools.Call(ctx, caller, session, plugins.ToolCall{Tool: "read", Args: map[string]any{argPath: path}})
			results <- result{path, err}
		}()
	}
	next := func() string {
		t.Helper()
		select {
		case p := <-h.entered:
			return p
		case <-time.After(time.Minute):
			t.Fatal("no call ran")
			return ""
		}
	}

	// Six calls, each started once the one before runs or waits, so that
	// their order of arrival is known.
	cancelled, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 6 {
		ctx := context.Background()
		if i == 3 {
			ctx = cancelled
		}
		start(ctx, "s", fmt.Sprintf("c%d", i))
		if i < 2 {
			if got := next(); got != fmt.Sprintf("c%d", i) {
				t.Fatalf("call %s ran, want c%d", got, i)
			}
			continue
		}
		waitFor(t, fmt.Sprintf("c%d to wait", i), func() bool {
			if len(h.entered) > 0 {
				t.Fatalf("call %s ran while two others ran (tools.max_parallel 2)", <-h.entered)
			}
			return env.tools.queued("s") == i-1
		})
	}
	select {
	case p := <-h.entered:
		t.Fatalf("call %s ran while two others ran (tools.max_parallel 2)", p)
	default:
	}

	// Another session has slots of its own.
	start(context.Background(), "other", "o1")
	if got := next(); got != "o1" {
		t.Fatalf("call %s ran, want o1 of another session", got)
	}
	close(h.gate("o1"))

	// c3 gives up while it waits: it never runs, and c4 comes after c2.
	cancel()
	waitFor(t, "c3 to leave the queue", func() bool { return env.tools.queued("s") == 3 })
	order := []string{}
	for _, p := range []string{"c1", "c0", "c2", "c4", "c5"} {
		close(h.gate(p))
		if len(order) < 3 {
			order = append(order, next())
		}
	}
	if fmt.Sprint(order) != "[c2 c4 c5]" {
		t.Errorf("the waiting calls ran in order %v, want [c2 c4 c5]", order)
	}
	errs := map[string]error{}
	for range 7 {
		r := <-results
		errs[r.path] = r.err
	}
	if !errors.Is(errs["c3"], context.Canceled) {
		t.Errorf("the call cancelled while waiting returned %v, want context.Canceled", errs["c3"])
	}
	for p, err := range errs {
		if p != "c3" && err != nil {
			t.Errorf("call %s: %v", p, err)
		}
	}
	if m := h.mostAtOnce("s"); m != 2 {
		t.Errorf("%d calls of one session ran at once, want 2 (tools.max_parallel)", m)
	}
	if n := len(env.tools.slots.sessions); n != 0 {
		t.Errorf("%d sessions still hold slots after every call ended, want 0", n)
	}
}

// TestToolsMaxParallelNestedCall: a call made from inside a call of the
// same session (plan_check running a verify block) takes no second slot,
// so that it cannot wait for itself under tools.max_parallel 1.
func TestToolsMaxParallelNestedCall(t *testing.T) {
	s := newSlots(1)
	ctx, release, err := s.acquire(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	inner, innerRelease, err := s.acquire(ctx, "s")
	if err != nil || inner != ctx {
		t.Fatalf("nested acquire = %v, want the slot held", err)
	}
	innerRelease()
	// The outer call still holds the only slot: another call waits for it.
	got := make(chan error, 1)
	go func() {
		_, rel, err := s.acquire(context.Background(), "s")
		if err == nil {
			rel()
		}
		got <- err
	}()
	waitFor(t, "the second call to wait", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.sessions["s"].running == 1 && len(s.sessions["s"].queue) == 1
	})
	release()
	if err := <-got; err != nil {
		t.Errorf("the waiting call after the release: %v", err)
	}
}
