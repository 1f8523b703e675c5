// Package realpath resolves a path to the real file a system call would
// reach, following every symlink in order, for the rules that must hold on
// real paths (Pattern's write scope, the project boundary of the tools).
package realpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxSymlinkHops bounds symlink resolution, as the kernel does.
const maxSymlinkHops = 40

// Resolve returns the real absolute path that opening p (relative to
// base) would reach: every existing component has its symlinks followed in
// order, so "dir/link/../x" goes where the OS goes, not where lexical
// cleaning says. Components from the first missing one on do not exist yet
// and are taken literally. A dangling symlink resolves to its target, which
// is where a write through it lands.
func Resolve(base, p string) (string, error) {
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
	return walk(p, &hops)
}

func walk(p string, hops *int) (string, error) {
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
				return walk(joined, hops)
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
			return walk(target+string(filepath.Separator)+rest, hops)
		}
		if !fi.IsDir() && strings.Join(comps[i+1:], "") != "" {
			return "", fmt.Errorf("resolve %s: %s is not a directory", p, next)
		}
		cur = next
	}
	return cur, nil
}

// Within reports whether path is root or below it (both real paths).
func Within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}
