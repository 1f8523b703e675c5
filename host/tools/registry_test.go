package tools

import (
	"slices"
	"testing"

	"github.com/weavehq/weave/plugins"
)

// Every tool of the table has an implementation here, and nothing else
// does: a tool added to plugins.Tools without its file (or the reverse)
// fails this test.
func TestEveryToolIsImplemented(t *testing.T) {
	for _, name := range plugins.ToolNames() {
		if _, ok := registry[name]; !ok {
			t.Errorf("tool %q is in plugins.Tools but no file of host/tools registers it", name)
		}
	}
	for name := range registry {
		if !slices.Contains(plugins.ToolNames(), name) {
			t.Errorf("tool %q is registered but not in plugins.Tools", name)
		}
	}
}

func TestRegisterRefusesUnknownAndDuplicate(t *testing.T) {
	for _, name := range []string{"no-such-tool", plugins.ToolRead} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("register(%q) did not panic", name)
				}
			}()
			register(name, nil)
		}()
	}
}
