package tools

import (
	"context"
	"os"
	"path/filepath"

	"github.com/weavehq/weave/internal/atomicfile"
	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolWrite, func(_ context.Context, t *Tools, c call) (plugins.ToolResult, error) { return t.write(c.args) })
}

func (t *Tools) write(args map[string]any) (plugins.ToolResult, error) {
	real, rel, err := t.pathOf(args)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	v, present := args[argContent]
	content, isString := v.(string)
	if !present || !isString {
		return failf("write %s: argument %q must be a string with the whole file's text (got %s)", rel, argContent, jsonType(v))
	}
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(real); err == nil {
		if fi.IsDir() {
			return failf("write %s: it is a directory; name a file", rel)
		}
		perm = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		return failf("write %s: create its directory: %v", rel, err)
	}
	if err := atomicfile.WriteFile(real, []byte(content), perm); err != nil {
		return failf("write %s: %v", rel, err)
	}
	return ok("wrote %d bytes to %s", len(content), rel)
}
