//go:build !unix

package tools

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/weavehq/weave/internal/atomicfile"
)

// Off unix there is no openat: a write or edit re-checks that no directory
// between the project root and the file is a link, then works by path. The
// window between that check and the write is narrower than the gate's, not
// closed as on unix.

// confinedDir is a directory of the project, checked to hold no link.
type confinedDir struct{ path string }

// openConfined checks the directories from root to real's parent, creating
// them with create.
func openConfined(root, real string, create bool) (*confinedDir, string, error) {
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, "", fmt.Errorf("%s is not inside %s", real, root)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	dir := root
	for _, c := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, c)
		fi, err := os.Lstat(dir)
		if os.IsNotExist(err) && create {
			if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
				return nil, "", fmt.Errorf("create directory %s: %w", c, err)
			}
			fi, err = os.Lstat(dir)
		}
		if err != nil {
			return nil, "", err
		}
		if !fi.IsDir() {
			return nil, "", errChanged
		}
	}
	return &confinedDir{path: dir}, parts[len(parts)-1], nil
}

func (d *confinedDir) Close() error { return nil }

// stat returns name's type and permissions without following a link; ok
// is false when it does not exist.
func (d *confinedDir) stat(name string) (fs.FileMode, bool, error) {
	fi, err := os.Lstat(filepath.Join(d.path, name))
	if os.IsNotExist(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return fi.Mode(), true, nil
}

// readFile reads the regular file name, at most limit bytes.
func (d *confinedDir) readFile(name string, limit int64) ([]byte, error) {
	if mode, ok, err := d.stat(name); err != nil {
		return nil, err
	} else if ok && !mode.IsRegular() {
		return nil, errChanged
	}
	f, err := os.Open(filepath.Join(d.path, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("it is larger than %d bytes", limit)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// writeFile replaces name atomically with data and perm.
func (d *confinedDir) writeFile(name string, data []byte, perm os.FileMode) error {
	if mode, ok, err := d.stat(name); err != nil {
		return err
	} else if ok && !mode.IsRegular() {
		return fmt.Errorf("not a regular file; replace it with a plain file")
	}
	return atomicfile.WriteFile(filepath.Join(d.path, name), data, perm)
}
