package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/plugins"
)

// TestScopedWriteLandsOnTheCheckedFile swaps a directory for a link to
// outside Pattern's scope after the gate checked the call and before the
// tool writes (a tool.execute.before hook runs in between), as a racing
// process would: the write must be refused, not land outside the scope.
func TestScopedWriteLandsOnTheCheckedFile(t *testing.T) {
	var project string
	for _, tool := range []string{plugins.ToolWrite, plugins.ToolEdit} {
		t.Run(tool, func(t *testing.T) {
			swap := &funcHook{name: "swap", events: []string{plugins.EventToolExecuteBefore}, handle: func(ev plugins.Event) plugins.Decision {
				notes := filepath.Join(project, ".weave", "notes")
				if err := os.Rename(notes, notes+".old"); err != nil {
					t.Errorf("swap: %v", err)
				}
				if err := os.Symlink(filepath.Join("..", "src"), notes); err != nil {
					t.Errorf("swap: %v", err)
				}
				return plugins.Decision{Action: plugins.Allow}
			}}
			e := newToolsEnv(t, nil, pipelineOf(t, swap))
			project = e.project
			writeFile(t, filepath.Join(e.project, ".weave", "notes", "x.md"), "old note")
			writeFile(t, filepath.Join(e.project, "src", "x.md"), "victim")
			args := map[string]any{"path": ".weave/notes/x.md", "content": "PWNED"}
			if tool == plugins.ToolEdit {
				args = map[string]any{"path": ".weave/notes/x.md", "old_string": "victim", "new_string": "PWNED"}
			}
			res := e.call(t, Caller{Agent: "pattern"}, tool, args)
			if !res.IsError || !strings.Contains(res.Output, "changed") {
				t.Errorf("%s through a swapped directory = %+v, want it refused as changed", tool, res)
			}
			if got := e.file(t, "src/x.md"); got != "victim" {
				t.Errorf("src/x.md = %q: the %s landed outside pattern's scope", got, tool)
			}
		})
	}
}

func TestConfinedDirRefusesALinkSwappedInAfterResolution(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b", "elsewhere"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	real := filepath.Join(root, "a", "b", "f.md") // resolved and checked
	// The race: b becomes a link after the check.
	if err := os.Rename(filepath.Join(root, "a", "b"), filepath.Join(root, "a", "b.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(root, "a", "b")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := openConfined(root, real, true); !errors.Is(err, errChanged) {
		t.Fatalf("openConfined through a swapped link = %v, want errChanged", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "elsewhere")); len(entries) != 0 {
		t.Errorf("something was written through the link: %v", entries)
	}

	// Without a race it writes where asked, making missing directories.
	d, name, err := openConfined(root, filepath.Join(root, "new", "dir", "g.md"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.writeFile(name, []byte("ok"), 0o640); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "new", "dir", "g.md"))
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("written file: %v %v, want mode 0640", fi, err)
	}
}
