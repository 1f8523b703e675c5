package tools

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolEdit, func(_ context.Context, t *Tools, c call) (plugins.ToolResult, error) { return t.edit(c.caller, c.args) })
}

// maxEditFile bounds the file edit reads and rewrites whole.
const maxEditFile = 64 << 20

func (t *Tools) edit(c Caller, args map[string]any) (plugins.ToolResult, error) {
	real, rel, err := t.pathOf(args)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	oldS, err := stringArg(args, argOldString, true)
	if err != nil {
		return failf("edit %s: %v; to create a file or replace all of it, use write", rel, err)
	}
	newS, err := stringArg(args, argNewString, false)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if _, present := args[argNewString]; !present {
		return failf("edit %s: missing argument %q (use \"\" to delete the old text)", rel, argNewString)
	}
	all, err := boolArg(args, argReplaceAll)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	if oldS == newS {
		return failf("edit %s: old_string and new_string are the same; nothing to change", rel)
	}
	asked, _ := plugins.ToolPath(args)
	if msg := t.ownedPath(asked, real); msg != "" {
		return refused(msg)
	}
	dir, name, err := t.confined(c, plugins.ToolEdit, args, real, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return failf("edit %s: no such file; use write to create it", rel)
		}
		return failf("edit %s: %v", rel, err)
	}
	defer dir.Close()
	st, exists, err := dir.stat(name)
	switch {
	case err != nil:
		return failf("edit %s: %v", rel, err)
	case !exists:
		return failf("edit %s: no such file; use write to create it", rel)
	case st.IsDir():
		return failf("edit %s: it is a directory; name a file", rel)
	}
	src, err := dir.readFile(name, maxEditFile)
	if err != nil {
		return failf("edit %s: %v", rel, err)
	}
	n := strings.Count(string(src), oldS)
	switch {
	case n == 0:
		return failf("edit %s: old_string was not found; read the file again and copy the text exactly, whitespace and indentation included (without read's line-number prefix)", rel)
	case n > 1 && !all:
		return failf("edit %s: old_string occurs %d times; include more surrounding lines to make it unique, or set replace_all: true to replace every occurrence", rel, n)
	}
	var out string
	if all {
		out = strings.ReplaceAll(string(src), oldS, newS)
	} else {
		out = strings.Replace(string(src), oldS, newS, 1)
	}
	if msg := t.ownedMarks(real, src, true, []byte(out)); msg != "" {
		return refused(msg)
	}
	if err := dir.writeFile(name, []byte(out), st.Perm()); err != nil {
		return failf("edit %s: %v", rel, err)
	}
	if n == 1 {
		return ok("replaced 1 occurrence in %s", rel)
	}
	return ok("replaced %d occurrences in %s", n, rel)
}
