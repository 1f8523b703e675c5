package hooks

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The fired Claude events are exactly the registered ones, and each is one
// Claude Code documents.
func TestClaudeEventNamesAgree(t *testing.T) {
	fired := slices.Sorted(slices.Values(ClaudeFiredEventNames()))
	mapped := slices.Sorted(maps.Keys(claudeEvents))
	if diff := cmp.Diff(mapped, fired); diff != "" {
		t.Errorf("ClaudeFiredEventNames vs claudeEvents (-mapped +fired):\n%s", diff)
	}
	for _, ev := range mapped {
		if !slices.Contains(ClaudeEventNames(), ev) {
			t.Errorf("%s is fired but not in the documented list", ev)
		}
	}
}
