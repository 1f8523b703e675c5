// Package atomicfile writes files so that readers see either the old content
// or the new content, never a mix, and so that the new content survives a
// crash once WriteFile has returned.
//
// The file is written to a temporary file in the same directory, synced,
// closed and renamed over the target, and then the directory itself is synced
// so the rename is durable. No well-kept library syncs the directory after the
// rename (renameio and natefinch/atomic stop at the rename), which is why this
// small package exists.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"time"

	"github.com/weavehq/weave/internal/proc"
)

// WriteFile writes data to path atomically. When path already exists its
// permission bits are kept and perm is ignored; otherwise the file gets perm.
// A path that exists but is not a regular file (a symlink, a directory) is
// refused, because renaming over it would silently replace the link.
// On any error the temporary file is removed and the target is untouched.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	if fi, statErr := os.Lstat(path); statErr == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("write %s: not a regular file (%s); replace it with a plain file", path, fi.Mode().Type())
		}
		perm = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	// The writer's PID in the name lets RemoveTemps tell a crash's leftover
	// from a write in progress.
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp"+strconv.Itoa(os.Getpid())+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// CreateTemp makes the file 0600; set the mode before the rename so
	// the target never appears with the wrong permissions.
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	return nil
}

// syncDir makes a rename in dir durable. Windows cannot open a directory
// for syncing, and its renames are already journaled by NTFS.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

// tempName matches the temporary files of WriteFile: .<name>.tmp<pid>.<n>,
// and .<name>.tmp<n> as older versions named them.
var tempName = regexp.MustCompile(`^\..+\.tmp(\d+)(\.\d+)?$`)

// staleAge is how old a temporary file without a writer's PID must be to be
// taken for a crash's leftover.
const staleAge = time.Minute

// RemoveTemps removes the temporary files that writers killed in the middle
// of a WriteFile left in dir: those whose writer is no longer running. It
// returns the names it removed; a missing dir has none.
func RemoveTemps(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look for leftover temporary files in %s: %w", dir, err)
	}
	var removed []string
	for _, de := range des {
		m := tempName.FindStringSubmatch(de.Name())
		if m == nil || !de.Type().IsRegular() {
			continue
		}
		if m[2] != "" {
			pid, err := strconv.Atoi(m[1])
			if err != nil || pid == os.Getpid() || proc.Running(pid) {
				continue
			}
		} else if fi, err := de.Info(); err != nil || time.Since(fi.ModTime()) < staleAge {
			continue
		}
		if err := os.Remove(filepath.Join(dir, de.Name())); err == nil {
			removed = append(removed, de.Name())
		}
	}
	return removed, nil
}
