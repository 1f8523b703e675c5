package supervisor

import "testing"

func TestWarmStartsNamedPluginsOnly(t *testing.T) {
	s, _ := newTestSupervisor(t, Options{}, supEntry("a", "hook"), supEntry("b", "hook"), supEntry("c", "hook"))
	s.Warm(testCtx(t), "a", "b", "no-such-plugin")
	for name, want := range map[string]bool{"a": true, "b": true, "c": false} {
		if got := statusOf(t, s, name).Running; got != want {
			t.Errorf("after Warm(a, b) plugin %s running = %v, want %v", name, got, want)
		}
	}
}
