package tools

import (
	"path/filepath"

	"github.com/weavehq/weave/internal/realpath"
)

// projectRel shows real relative to root when it is inside, else as is.
func projectRel(root, real string) string {
	if realpath.Within(root, real) {
		if rel, err := filepath.Rel(root, real); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return real
}
