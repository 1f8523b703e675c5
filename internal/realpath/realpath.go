// Package realpath resolves a path to the real file a system call would
// reach, following every symlink in order, for the rules that must hold on
// real paths (Pattern's write scope, the project boundary of the tools).
//
// Resolution is a loop over path components, never a recursion: a name
// component equal to ".." is the parent, a name that merely contains ".."
// ("notes..txt", "changes-v1..v2.md") is an ordinary name, and the work done
// is bounded by the length of the path and maxSymlinkHops links.
package realpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxSymlinkHops bounds symlink resolution, as the kernel does.
const maxSymlinkHops = 40

const sep = string(filepath.Separator)

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
		p = base + sep + p
	}
	return walk(p)
}

// walk resolves the absolute path p. todo holds the components still to
// resolve against cur, the real directory reached so far; a symlink puts
// its target's components in front of the rest.
func walk(p string) (string, error) {
	todo := strings.Split(p, sep)
	cur := sep
	hops := 0
	missingRestarts := 0
	for len(todo) > 0 {
		c := todo[0]
		switch c {
		case "", ".":
			todo = todo[1:]
			continue
		case "..":
			cur = filepath.Dir(cur)
			todo = todo[1:]
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			joined := filepath.Join(cur, strings.Join(todo, sep))
			if !slices.Contains(todo, "..") {
				return joined, nil
			}
			// Once created, the missing directories are real, so ".." after
			// them is lexical; what it lands on may hold links, so the
			// cleaned path (which has no ".." left) is walked again. Only a
			// link can bring a ".." back, so this happens at most once more
			// than there are hops.
			missingRestarts++
			if missingRestarts > maxSymlinkHops+1 {
				return "", fmt.Errorf("resolve %s: too many levels of symbolic links", p)
			}
			todo = strings.Split(joined, sep)
			cur = sep
			continue
		}
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", next, err)
		}
		rest := todo[1:]
		if fi.Mode()&fs.ModeSymlink != 0 {
			hops++
			if hops > maxSymlinkHops {
				return "", fmt.Errorf("resolve %s: too many levels of symbolic links", p)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", fmt.Errorf("resolve %s: %w", next, err)
			}
			if filepath.IsAbs(target) {
				cur = sep
			}
			todo = append(strings.Split(target, sep), rest...)
			continue
		}
		if !fi.IsDir() && strings.Join(rest, "") != "" {
			return "", fmt.Errorf("resolve %s: %s is not a directory", p, next)
		}
		cur = next
		todo = rest
	}
	return cur, nil
}

// Within reports whether path is root or below it (both real paths).
func Within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+sep))
}
