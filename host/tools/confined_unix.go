//go:build unix

package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// On unix a write or edit lands on the file the gate checked, not on whatever the
// path names by the time the bytes are written: the path is resolved and
// checked, then its directory is opened from the project root one
// component at a time without following a link (O_NOFOLLOW on each
// openat), and the file is read, created and renamed relative to that
// directory handle. A directory swapped for a symbolic link between the
// check and the write makes the write fail instead of landing elsewhere.

// confinedDir is a directory of the project held open by handle.
type confinedDir struct {
	fd   int
	path string // for messages
}

// openConfined opens the directory holding real, a resolved path inside
// root, walking from root without following links; with create, missing
// directories are made (0755).
func openConfined(root, real string, create bool) (*confinedDir, string, error) {
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, "", fmt.Errorf("%s is not inside %s", real, root)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open %s: %w", root, err)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for _, c := range parts[:len(parts)-1] {
		next, err := openDirAt(fd, c)
		if errors.Is(err, unix.ENOENT) && create {
			if err := unix.Mkdirat(fd, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return nil, "", fmt.Errorf("create directory %s: %w", c, err)
			}
			next, err = openDirAt(fd, c)
		}
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return nil, "", errChanged
			}
			return nil, "", err
		}
		fd = next
	}
	return &confinedDir{fd: fd, path: filepath.Dir(real)}, parts[len(parts)-1], nil
}

func openDirAt(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return fd, err
	}
}

func (d *confinedDir) Close() error { return unix.Close(d.fd) }

// stat returns name's type and permissions without following a link; ok
// is false when it does not exist.
func (d *confinedDir) stat(name string) (mode fs.FileMode, ok bool, err error) {
	var st unix.Stat_t
	err = unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	mode = fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	default:
		mode |= fs.ModeIrregular
	}
	return mode, true, nil
}

// readFile reads the regular file name, at most limit bytes.
func (d *confinedDir) readFile(name string, limit int64) ([]byte, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, errChanged
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), filepath.Join(d.path, name))
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errChanged
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("it is larger than %d bytes", limit)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// writeFile replaces name atomically (a temporary file in the directory,
// synced, renamed over name, the directory synced) with data and perm. An
// existing name that is not a regular file is refused, as a link would be
// replaced.
func (d *confinedDir) writeFile(name string, data []byte, perm os.FileMode) (err error) {
	if mode, ok, err := d.stat(name); err != nil {
		return err
	} else if ok && !mode.IsRegular() {
		return errors.New("not a regular file; replace it with a plain file")
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + ".tmp" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = unix.Unlinkat(d.fd, tmp, 0)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = unix.Renameat(d.fd, tmp, d.fd, name); err != nil {
		return err
	}
	return unix.Fsync(d.fd)
}
