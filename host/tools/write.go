package tools

import (
	"context"
	"fmt"
	"os"

	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

func init() {
	register(plugins.ToolWrite, func(_ context.Context, t *Tools, c call) (plugins.ToolResult, error) {
		return t.write(c.caller, c.args)
	})
}

func (t *Tools) write(c Caller, args map[string]any) (plugins.ToolResult, error) {
	real, rel, err := t.pathOf(args)
	if err != nil {
		return plugins.ToolResult{}, err
	}
	v, present := args[argContent]
	content, isString := v.(string)
	if !present || !isString {
		return failf("write %s: argument %q must be a string with the whole file's text (got %s)", rel, argContent, jsonType(v))
	}
	asked, _ := plugins.ToolPath(args)
	if msg := t.ownedPath(asked, real); msg != "" {
		return refused(msg)
	}
	dir, name, err := t.confined(c, plugins.ToolWrite, args, real, true)
	if err != nil {
		return failf("write %s: %v", rel, err)
	}
	defer dir.Close()
	perm := os.FileMode(0o644)
	st, exists, err := dir.stat(name)
	if err != nil {
		return failf("write %s: %v", rel, err)
	} else if exists {
		if st.IsDir() {
			return failf("write %s: it is a directory; name a file", rel)
		}
		perm = st.Perm()
	}
	if isPlanFile(projectRel(t.root, real)) {
		// A plan's checkbox bytes are host-owned: compare with what the
		// file holds now.
		var prev []byte
		if exists {
			if prev, err = dir.readFile(name, plans.MaxPlanSize); err != nil {
				return failf("write %s: %v", rel, err)
			}
		}
		if msg := t.ownedMarks(real, prev, exists, []byte(content)); msg != "" {
			return refused(msg)
		}
	}
	if err := dir.writeFile(name, []byte(content), perm); err != nil {
		return failf("write %s: %v", rel, err)
	}
	return ok("wrote %d bytes to %s", len(content), rel)
}

// confined checks real, the resolved path of a write or edit, against the
// caller's write scope once more and opens its directory by handle (see
// confinedDir), so that the file written is the file checked.
func (t *Tools) confined(c Caller, tool string, args map[string]any, real string, create bool) (*confinedDir, string, error) {
	p, _ := plugins.ToolPath(args)
	if prob := t.gate.scopeOnReal(c, tool, t.root, p, real); prob != "" {
		return nil, "", fmt.Errorf("the path changed while the call was checked: %s", prob)
	}
	return openConfined(t.root, real, create)
}
