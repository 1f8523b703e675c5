package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weavehq/weave/config"
)

// A machine without a sandbox (simulated by the probe): strict refuses
// bash and says why; auto runs it and warns once per Tools; off never
// probes.
func TestSandboxUnavailable(t *testing.T) {
	unavailable := errors.New("sandbox: this machine does not let an unprivileged process create user namespaces")
	probe := func(probes *atomic.Int32) Option {
		return WithSandboxProbe(func(context.Context) error { probes.Add(1); return unavailable })
	}

	t.Run("strict", func(t *testing.T) {
		var probes atomic.Int32
		e := newToolsEnv(t, func(c *config.Config) { c.Sandbox.Mode = "strict" }, nil, probe(&probes))
		for range 2 {
			res := e.call(t, asTapestry, "bash", map[string]any{"command": "echo ran > ran.txt"})
			want := "refused by sandbox.mode strict: bash cannot be sandboxed on this machine (" + unavailable.Error() + ")"
			if !res.Denied || res.Output != want {
				t.Errorf("bash under strict = %+v, want refused with %q", res, want)
			}
		}
		if _, err := os.Stat(filepath.Join(e.project, "ran.txt")); err == nil {
			t.Error("bash ran under strict without a sandbox")
		}
		if n := probes.Load(); n != 1 {
			t.Errorf("probed %d times, want once", n)
		}
	})

	t.Run("auto", func(t *testing.T) {
		var probes atomic.Int32
		var notices []string
		e := newToolsEnv(t, nil, nil, probe(&probes), WithNotice(func(s string) { notices = append(notices, s) }))
		for range 2 {
			res := e.call(t, asTapestry, "bash", map[string]any{"command": "echo ran"})
			expect(t, "bash under auto", res, false, "ran")
		}
		if len(notices) != 1 || !strings.Contains(notices[0], "bash runs without a sandbox: "+unavailable.Error()) {
			t.Errorf("notices = %q, want one warning naming the reason", notices)
		}
		if n := probes.Load(); n != 1 {
			t.Errorf("probed %d times, want once", n)
		}
	})

	t.Run("off", func(t *testing.T) {
		var probes atomic.Int32
		e := newToolsEnv(t, func(c *config.Config) { c.Sandbox.Mode = "off" }, nil, probe(&probes))
		expect(t, "bash under off", e.call(t, asTapestry, "bash", map[string]any{"command": "echo ran"}), false, "ran")
		if n := probes.Load(); n != 0 {
			t.Errorf("probed %d times with sandbox.mode off", n)
		}
	})
}
