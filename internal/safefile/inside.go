package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/weavehq/weave/internal/realpath"
)

// ErrOutside is wrapped by the errors of the Inside functions for a path
// that leads out of its root, through a symbolic link on the way.
var ErrOutside = errors.New("it leads outside the project through a symbolic link, which weave does not follow")

// Inside opens and changes the files weave keeps under a project's .weave/
// (sessions, the cache, the logs): every path is relative to Root and must
// stay below it on disk, so a link anywhere on the way that leads out of
// the project is refused, and the file itself must be a regular file that
// is not a symbolic link. The checks are made by the kernel on the open
// descriptors (os.Root), not only on names, so a link swapped in between a
// check and the open cannot take a write out of the project.
type Inside struct {
	// Root is the project directory.
	Root string
}

// rel turns path (absolute, or relative to the working directory) into a
// path relative to the root, and refuses one that is not below it, or
// whose real path is not.
func (in Inside) rel(path string) (string, error) {
	rel, err := in.Lexical(path)
	if err != nil {
		return "", err
	}
	root, err := filepath.Abs(in.Root)
	if err != nil {
		return "", err
	}
	// The real path makes the message say where a link leads; os.Root
	// then enforces it on the descriptors.
	realRoot, err := realpath.Resolve("", root)
	if err != nil {
		return "", err
	}
	real, err := realpath.Resolve(realRoot, rel)
	if err != nil {
		return "", err
	}
	if !realpath.Within(realRoot, real) {
		return "", &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (it resolves to %s)", ErrOutside, real)}
	}
	return rel, nil
}

// wrapRoot names an escape os.Root caught (a link changed since rel looked)
// with ErrOutside.
func wrapRoot(path string, err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrExist) {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err.Error() == "path escapes from parent" {
		return &fs.PathError{Op: pe.Op, Path: path, Err: ErrOutside}
	}
	return err
}

// OpenFile opens path with flag (os.O_RDONLY, or os.O_WRONLY|os.O_CREATE|
// os.O_APPEND, say) and perm for a new file. It never blocks on a named
// pipe, and fails unless the file is a regular file inside the root that
// is not a symbolic link.
func (in Inside) OpenFile(path string, flag int, perm os.FileMode) (f *os.File, err error) {
	err = in.at(path, func(r *os.Root, rel string) error {
		f, err = openIn(r, rel, path, flag, perm)
		return err
	})
	if err != nil {
		return nil, err
	}
	return regular(f, path)
}

// OpenFileAt is OpenFile through r, the root opened already (os.OpenRoot
// of in.Root) and held by a caller that opens many files in it: the root's
// path is not resolved again for each. path must name a place below the
// root; r holds every step inside it as OpenFile's does, and a failure
// says less than OpenFile's would of where a link leads.
func (in Inside) OpenFileAt(r *os.Root, path string, flag int, perm os.FileMode) (*os.File, error) {
	rel, err := in.Lexical(path)
	if err != nil {
		return nil, err
	}
	f, err := openIn(r, rel, path, flag, perm)
	if err != nil {
		return nil, err
	}
	return regular(f, path)
}

// MkdirAllAt is MkdirAll through r, as OpenFileAt is OpenFile.
func (in Inside) MkdirAllAt(r *os.Root, dir string, perm os.FileMode) error {
	rel, err := in.Lexical(dir)
	if err != nil {
		return err
	}
	return wrapRoot(dir, r.MkdirAll(rel, perm))
}

// Lexical is path relative to the root, by name alone; a path not below
// the root is refused. What it names is for os.Root to hold inside.
func (in Inside) Lexical(path string) (string, error) {
	root, err := filepath.Abs(in.Root)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("not inside the project %s", root)}
	}
	return rel, nil
}

// openIn opens rel in r, refusing a symbolic link.
func openIn(r *os.Root, rel, path string, flag int, perm os.FileMode) (*os.File, error) {
	if fi, err := r.Lstat(rel); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
	}
	f, err := r.OpenFile(rel, flag|openFlags, perm)
	return f, wrapRoot(path, err)
}

// regular returns f if it is a regular file, else closes it.
func regular(f *os.File, path string) (*os.File, error) {
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: notRegular(fi.Mode())}
	}
	return f, nil
}

// at runs fn on path's name relative to the root, with the root opened as
// an os.Root, which holds every step of fn inside it.
func (in Inside) at(path string, fn func(r *os.Root, rel string) error) error {
	rel, err := in.rel(path)
	if err != nil {
		return err
	}
	r, err := os.OpenRoot(in.Root)
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r, rel)
}

// Open opens path read-only; see OpenFile.
func (in Inside) Open(path string) (*os.File, error) { return in.OpenFile(path, os.O_RDONLY, 0) }

// ReadFile reads the regular file at path inside the root, refusing one
// larger than limit bytes with a *TooLargeError.
func (in Inside) ReadFile(path string, limit int64) ([]byte, error) {
	f, err := in.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadDir lists the directory dir inside the root.
func (in Inside) ReadDir(dir string) (entries []fs.DirEntry, err error) {
	err = in.at(dir, func(r *os.Root, rel string) error {
		f, err := r.Open(rel)
		if err != nil {
			return wrapRoot(dir, err)
		}
		defer f.Close()
		entries, err = f.ReadDir(-1)
		return err
	})
	return entries, err
}

// MkdirAll makes dir and its missing parents inside the root.
func (in Inside) MkdirAll(dir string, perm os.FileMode) error {
	return in.at(dir, func(r *os.Root, rel string) error { return wrapRoot(dir, r.MkdirAll(rel, perm)) })
}

// Rename renames from to to, both inside the root.
func (in Inside) Rename(from, to string) error {
	relFrom, err := in.rel(from)
	if err != nil {
		return err
	}
	return in.at(to, func(r *os.Root, relTo string) error { return wrapRoot(to, r.Rename(relFrom, relTo)) })
}

// Remove removes path inside the root.
func (in Inside) Remove(path string) error {
	return in.at(path, func(r *os.Root, rel string) error { return wrapRoot(path, r.Remove(rel)) })
}
