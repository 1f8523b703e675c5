package hooks

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The listed Claude events are exactly the mapped ones.
func TestClaudeEventNamesAgree(t *testing.T) {
	listed := slices.Sorted(slices.Values(ClaudeEventNames()))
	mapped := slices.Sorted(maps.Keys(claudeEvents))
	if diff := cmp.Diff(mapped, listed); diff != "" {
		t.Errorf("ClaudeEventNames vs claudeEvents (-mapped +listed):\n%s", diff)
	}
}
