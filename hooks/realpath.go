package hooks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/weavehq/weave/plugins"
)

// maxSymlinkHops bounds symlink resolution, as the kernel does.
const maxSymlinkHops = 40

// resolvePath returns the real absolute path that opening p (relative to
// base) would reach: every existing component has its symlinks followed in
// order, so "dir/link/../x" goes where the OS goes, not where lexical
// cleaning says. Components from the first missing one on do not exist yet
// and are taken literally. A dangling symlink resolves to its target, which
// is where a write through it lands.
func resolvePath(base, p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if !filepath.IsAbs(p) {
		if base == "" {
			return "", fmt.Errorf("relative path %q without a project directory", p)
		}
		p = base + string(filepath.Separator) + p
	}
	hops := 0
	return walkPath(p, &hops)
}

func walkPath(p string, hops *int) (string, error) {
	comps := strings.Split(p, string(filepath.Separator))
	cur := string(filepath.Separator)
	for i, c := range comps {
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			rest := strings.Join(comps[i:], string(filepath.Separator))
			joined := filepath.Join(cur, rest)
			if strings.Contains(rest, "..") {
				// Once created, the missing directories are real, so ".."
				// after them is lexical; what it lands on may hold links.
				return walkPath(joined, hops)
			}
			return joined, nil
		}
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", next, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			*hops++
			if *hops > maxSymlinkHops {
				return "", fmt.Errorf("resolve %s: too many levels of symbolic links", p)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", fmt.Errorf("resolve %s: %w", next, err)
			}
			if !filepath.IsAbs(target) {
				target = cur + string(filepath.Separator) + target
			}
			rest := strings.Join(comps[i+1:], string(filepath.Separator))
			return walkPath(target+string(filepath.Separator)+rest, hops)
		}
		if !fi.IsDir() && strings.Join(comps[i+1:], "") != "" {
			return "", fmt.Errorf("resolve %s: %s is not a directory", p, next)
		}
		cur = next
	}
	return cur, nil
}

// projectDir picks the project directory of an event: the event's own, else
// the configured one.
func projectDir(ev plugins.Event, configured string) (string, error) {
	if ev.Cwd != "" {
		return ev.Cwd, nil
	}
	if configured != "" {
		return configured, nil
	}
	return "", errors.New("the event has no cwd and no project directory is configured")
}

// within reports whether path is root or below it (both real paths).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}
