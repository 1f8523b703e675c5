package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolGlob, func(ctx context.Context, t *Tools, c call) (plugins.ToolResult, error) { return t.glob(ctx, c.args) })
}

func (t *Tools) glob(ctx context.Context, args map[string]any) (plugins.ToolResult, error) {
	pattern, err := stringArg(args, argPattern, true)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	pattern = filepath.ToSlash(pattern)
	if strings.HasPrefix(pattern, "/") || slices.Contains(strings.Split(pattern, "/"), "..") {
		return failf("glob %q: the pattern must be relative and must not contain \"..\"; use path to search from another directory of the project", pattern)
	}
	if !doublestar.ValidatePattern(pattern) {
		return failf("glob %q: not a valid pattern (see https://github.com/bmatcuk/doublestar#patterns: *, **, ?, [abc], {a,b})", pattern)
	}
	dir, dirRel, err := t.dirArg(args)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return failf("glob: path %s is not a directory", dirRel)
	}
	var found []string
	more := false
	err = doublestar.GlobWalk(os.DirFS(dir), pattern, func(p string, d fs.DirEntry) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if slices.Contains(strings.Split(p, "/"), ".git") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if len(found) == maxGlobResults {
			more = true
			return fs.SkipAll
		}
		found = append(found, projectRel(t.root, filepath.Join(dir, filepath.FromSlash(p))))
		return nil
	}, doublestar.WithFilesOnly(), doublestar.WithNoFollow())
	if err != nil && !errors.Is(err, fs.SkipAll) {
		if ctx.Err() != nil {
			return plugins.ToolResult{}, ctx.Err()
		}
		return failf("glob %q: %v", pattern, err)
	}
	if len(found) == 0 {
		return ok("no files match %q under %s", pattern, dirRel)
	}
	slices.Sort(found)
	out := strings.Join(found, "\n") + "\n"
	if more {
		out += fmt.Sprintf("[only the first %d matches are shown; narrow the pattern or the path]\n", maxGlobResults)
	}
	return ok("%s", out)
}
