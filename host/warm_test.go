package host

import "testing"

func TestWarmStartsNamedPluginsOnly(t *testing.T) {
	s, _ := newTestSupervisor(t, SupervisorOptions{}, supEntry("a", "hook"), supEntry("b", "hook"), supEntry("c", "hook"))
	s.Warm(testCtx(t), "a", "b", "no-such-plugin")
	for name, want := range map[string]bool{"a": true, "b": true, "c": false} {
		if got := statusOf(t, s, name).Running; got != want {
			t.Errorf("after Warm(a, b) plugin %s running = %v, want %v", name, got, want)
		}
	}
}

func TestIsRunEvent(t *testing.T) {
	for ev, want := range map[string]bool{"tool.execute.before": true, "plan.task.done": true, "chat.message": false, "session.compacting": false} {
		if got := IsRunEvent(ev); got != want {
			t.Errorf("IsRunEvent(%q) = %v, want %v", ev, got, want)
		}
	}
}
