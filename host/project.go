package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weavehq/weave/internal/layout"
)

// ErrNoProject reports that no directory holding .weave/ was found.
var ErrNoProject = errors.New("no .weave directory")

// FindProject returns the nearest directory at or above start that holds a
// .weave directory.
func FindProject(start string) (string, error) {
	abs, err := filepath.Abs(start)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", start, err)
	}
	for dir := abs; ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(layout.NewProject(dir).Dir()); err == nil && fi.IsDir() {
			return dir, nil
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("%w in %s or any directory above it; run `weave init` to create one", ErrNoProject, abs)
		}
	}
}
