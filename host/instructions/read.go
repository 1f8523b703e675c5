package instructions

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/weavehq/weave/internal/realpath"
	"github.com/weavehq/weave/internal/safefile"
)

// MaxBytes is the most read from one instruction file, skill or command.
const MaxBytes = 64 << 10

// errOutside says a project file leads out of the project.
var errOutside = errors.New("it leads outside the project")

// readCapped reads the regular file at path, at most MaxBytes of it. With
// root set, the file's real path must be inside root. cut reports a file
// longer than the cap.
func readCapped(root, path string) (text string, cut bool, err error) {
	real := path
	if root != "" {
		r, err := realpath.Resolve("", root)
		if err != nil {
			return "", false, fmt.Errorf("resolve %s: %w", root, err)
		}
		real, err = realpath.Resolve(r, path)
		if err != nil {
			return "", false, fmt.Errorf("resolve %s: %w", path, err)
		}
		if !realpath.Within(r, real) {
			return "", false, fmt.Errorf("read %s: %w (to %s)", path, errOutside, real)
		}
	}
	f, err := safefile.Open(real)
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > MaxBytes {
		return string(b[:MaxBytes]), true, nil
	}
	return string(b), false, nil
}

// isFile reports whether path names something a read may try: absent
// is false, any other error is returned.
func isFile(path string) (bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look for %s: %w", path, err)
	}
	return !fi.IsDir(), nil
}

// cutNote is what follows a text cut at MaxBytes.
func cutNote(shown string) string {
	return fmt.Sprintf("\n[cut: %s is longer than %s; only its start is here]", shown, safefile.FormatSize(MaxBytes))
}

// shownPath is path as a person reads it: relative to the project when
// inside it.
func shownPath(project, path string) string {
	if project != "" {
		if rel, err := filepath.Rel(project, path); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return path
}
