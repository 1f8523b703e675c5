package layout

import (
	"go/token"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/srcscan"
)

// TestDirNameIsSpelledHereOnly fails when code outside this package spells
// the project directory (".weave") in a string instead of asking the
// layout: a path spelled twice drifts. Tests may spell it, to check what
// the code wrote.
func TestDirNameIsSpelledHereOnly(t *testing.T) {
	srcscan.Strings(t, nil, func(pos token.Position, s string) {
		if s == DirName || strings.HasPrefix(s, DirName+"/") {
			t.Errorf("%s: %q spells the project directory; use internal/layout", pos, s)
		}
	})
}
