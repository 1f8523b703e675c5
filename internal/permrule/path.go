package permrule

import (
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// absGlob turns a rule's gitignore-style path pattern into an absolute
// glob (slash-separated): //abs, ~/home, /root-relative, a/b relative to
// the root, name anywhere under the root.
func absGlob(pattern, root, home string) string {
	p := filepath.ToSlash(pattern)
	p = strings.TrimSuffix(p, "/")
	root, home = filepath.ToSlash(root), filepath.ToSlash(home)
	switch {
	case strings.HasPrefix(p, "//"):
		return "/" + strings.TrimLeft(p, "/")
	case p == "~" || strings.HasPrefix(p, "~/"):
		return strings.TrimSuffix(home, "/") + strings.TrimPrefix(p, "~")
	case strings.HasPrefix(p, "/"):
		return strings.TrimSuffix(root, "/") + p
	}
	p = strings.TrimPrefix(p, "./")
	if strings.Contains(p, "/") {
		return strings.TrimSuffix(root, "/") + "/" + p
	}
	return strings.TrimSuffix(root, "/") + "/**/" + p
}

// matchPath reports whether abs (an absolute path) or a directory above it
// matches the glob, as gitignore does.
func matchPath(glob, abs string) bool {
	p := filepath.ToSlash(filepath.Clean(abs))
	for {
		if ok, err := doublestar.Match(glob, p); err == nil && ok {
			return true
		}
		parent := filepath.ToSlash(filepath.Dir(p))
		if parent == p {
			return false
		}
		p = parent
	}
}
