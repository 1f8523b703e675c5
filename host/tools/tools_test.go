package tools

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/proctest"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/plans"
	"github.com/weavehq/weave/plugins"
)

var (
	asLoom     = Caller{Agent: "loom"}
	asTapestry = Caller{Agent: "tapestry"}
)

type toolsEnv struct {
	tools   *Tools
	project string
	outside string
	events  *eventLog
}

type eventLog struct {
	mu  sync.Mutex
	evs []plugins.Event
}

func (l *eventLog) add(ev plugins.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

func (l *eventLog) all() []plugins.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]plugins.Event(nil), l.evs...)
}

// newToolsEnv builds tools over a fresh project (see gateProject). edit may
// change the config before the tools are built.
func newToolsEnv(t *testing.T, edit func(*config.Config), pipeline Pipeline, opts ...Option) *toolsEnv {
	t.Helper()
	project, outside := gateProject(t)
	cfg := config.Default()
	if edit != nil {
		edit(cfg)
	}
	g, err := NewGate(cfg, nil)
	if err != nil {
		t.Fatalf("NewGate: %v", err)
	}
	ev := &eventLog{}
	opts = append([]Option{WithEventFunc(ev.add)}, opts...)
	tools, err := New(project, cfg, g, pipeline, opts...)
	if err != nil {
		t.Fatalf("NewTools: %v", err)
	}
	return &toolsEnv{tools: tools, project: project, outside: outside, events: ev}
}

func (e *toolsEnv) call(t *testing.T, c Caller, tool string, args map[string]any) plugins.ToolResult {
	t.Helper()
	res, err := e.tools.Call(context.Background(), c, "s1", plugins.ToolCall{Tool: tool, Args: args})
	if err != nil {
		t.Fatalf("Call(%s, %s, %v) error = %v, want a result", c, tool, args, err)
	}
	return res
}

func (e *toolsEnv) file(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.project, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// expect checks a result's error flag and that its output has each piece.
func expect(t *testing.T, what string, res plugins.ToolResult, isError bool, has ...string) {
	t.Helper()
	if res.IsError != isError {
		t.Errorf("%s: IsError = %v, want %v (output %q)", what, res.IsError, isError, res.Output)
	}
	for _, s := range has {
		if !strings.Contains(res.Output, s) {
			t.Errorf("%s: output = %q, want it to contain %q", what, res.Output, s)
		}
	}
}

func TestToolRead(t *testing.T) {
	e := newToolsEnv(t, func(c *config.Config) { c.Tools.Read.MaxBytes = 200 }, nil)
	writeFile(t, filepath.Join(e.project, "notes.txt"), "alpha\nbeta\r\ngamma\ndelta")
	writeFile(t, filepath.Join(e.project, "big.txt"), strings.Repeat("0123456789\n", 100))
	writeFile(t, filepath.Join(e.project, "bin.dat"), "ab\x00cd")
	writeFile(t, filepath.Join(e.project, "empty.txt"), "")
	symlink(t, filepath.Join(e.outside, "x.md"), filepath.Join(e.project, "escape.md"))
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    string // whole output when not an error, else a piece
	}{
		{"whole file with line numbers", map[string]any{"path": "notes.txt"}, false, "     1\talpha\n     2\tbeta\n     3\tgamma\n     4\tdelta\n"},
		{"offset and limit", map[string]any{"path": "notes.txt", "offset": float64(2), "limit": float64(2)}, false, "     2\tbeta\n     3\tgamma\n"},
		{"absolute path inside", map[string]any{"path": filepath.Join(e.project, "notes.txt"), "limit": 1}, false, "     1\talpha\n"},
		{"claude's file_path", map[string]any{"file_path": "notes.txt", "limit": "1"}, false, "     1\talpha\n"},
		{"empty file", map[string]any{"path": "empty.txt"}, false, "empty.txt is empty"},
		{"offset past the end", map[string]any{"path": "notes.txt", "offset": 9}, true, "has 4 lines; offset 9 is past its end"},
		{"missing file", map[string]any{"path": "nope.txt"}, true, "read nope.txt: no such file; use glob"},
		{"directory", map[string]any{"path": "src"}, true, "it is a directory"},
		{"binary", map[string]any{"path": "bin.dat"}, true, "binary file"},
		{"outside by dot-dot", map[string]any{"path": "../outside/x.md"}, true, "is outside the project"},
		{"outside by absolute path", map[string]any{"path": filepath.Join(e.outside, "x.md")}, true, "is outside the project"},
		{"outside by symlink", map[string]any{"path": "escape.md"}, true, "is outside the project"},
		{"no path", map[string]any{}, true, `missing argument "path"`},
		{"bad offset type", map[string]any{"path": "notes.txt", "offset": true}, true, `argument "offset" must be a number`},
		{"fractional limit", map[string]any{"path": "notes.txt", "limit": 1.5}, true, "must be a whole number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.call(t, asLoom, "read", tc.args)
			if tc.isError || tc.name == "empty file" {
				expect(t, "read", res, tc.isError, tc.want)
				return
			}
			expect(t, "read", res, false)
			if res.Output != tc.want {
				t.Errorf("read(%v) = %q, want %q", tc.args, res.Output, tc.want)
			}
		})
	}
	t.Run("one huge line", func(t *testing.T) {
		writeFile(t, filepath.Join(e.project, "min.js"), strings.Repeat("x", 100_000)+"\nsecond\n")
		res := e.call(t, asLoom, "read", map[string]any{"path": "min.js"})
		expect(t, "read min.js", res, false, "     1\txxxx", "lines 1-1 shown; read on with offset 2")
		if len(res.Output) > 400 {
			t.Errorf("read(min.js) returned %d bytes, want the line cut near tools.read.max_bytes (200)", len(res.Output))
		}
		res = e.call(t, asLoom, "read", map[string]any{"path": "min.js", "offset": 2})
		if res.Output != "     2\tsecond\n" {
			t.Errorf("read(min.js, offset 2) = %q, want the second line", res.Output)
		}
	})
	t.Run("the cut output says where to go on", func(t *testing.T) {
		res := e.call(t, asLoom, "read", map[string]any{"path": "big.txt"})
		if n := strings.Count(res.Output, "\t0123456789\n"); n == 0 || n > 200/17+1 {
			t.Errorf("read(big.txt) shows %d lines, want some but within 200 bytes", n)
		}
		expect(t, "read big.txt", res, false, "more than tools.read.max_bytes (200)", "lines 1-11 shown")
		if !strings.Contains(res.Output, "read on with offset 12") {
			t.Errorf("read(big.txt) = %q, want advice to read on", res.Output)
		}
	})
}

func TestToolWrite(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	res := e.call(t, asTapestry, "write", map[string]any{"path": "a/b/c.txt", "content": "hello\n"})
	expect(t, "write new", res, false, "wrote 6 bytes to a/b/c.txt")
	if got := e.file(t, "a/b/c.txt"); got != "hello\n" {
		t.Errorf("a/b/c.txt = %q, want %q", got, "hello\n")
	}
	// An existing file keeps its mode; no temp file is left behind.
	script := filepath.Join(e.project, "run.sh")
	writeFile(t, script, "old")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	expect(t, "write existing", e.call(t, asTapestry, "write", map[string]any{"path": "run.sh", "content": "#!/bin/sh\n"}), false)
	if fi, _ := os.Stat(script); fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode after write = %v, want 0755", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(e.project)
	for _, en := range entries {
		if strings.Contains(en.Name(), ".tmp") {
			t.Errorf("write left %s behind", en.Name())
		}
	}
	// Writing through a link inside the project writes its target.
	symlink(t, "src/main.go", filepath.Join(e.project, "main-link.go"))
	expect(t, "write via link", e.call(t, asTapestry, "write", map[string]any{"path": "main-link.go", "content": "package x\n"}), false, "src/main.go")
	if got := e.file(t, "src/main.go"); got != "package x\n" {
		t.Errorf("src/main.go = %q, want the content written through the link", got)
	}
	symlink(t, e.outside, filepath.Join(e.project, "out"))
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"outside by dot-dot", map[string]any{"path": "../evil.txt", "content": "x"}, "is outside the project"},
		{"outside through a linked directory", map[string]any{"path": "out/evil.txt", "content": "x"}, "is outside the project"},
		{"outside absolute", map[string]any{"path": "/tmp/weave-evil.txt", "content": "x"}, "is outside the project"},
		{"content missing", map[string]any{"path": "x.txt"}, `argument "content" must be a string`},
		{"content not a string", map[string]any{"path": "x.txt", "content": 3.0}, "got a number"},
		{"a directory", map[string]any{"path": "src", "content": "x"}, "it is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, "write", e.call(t, asTapestry, "write", tc.args), true, tc.want)
		})
	}
	if _, err := os.Stat(filepath.Join(e.outside, "evil.txt")); err == nil {
		t.Errorf("a write escaped the project to %s", filepath.Join(e.outside, "evil.txt"))
	}
}

func TestToolEdit(t *testing.T) {
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    string
		after   string
	}{
		{"unique", map[string]any{"old_string": "two", "new_string": "2"}, false, "replaced 1 occurrence in f.txt", "one\n2\nthree x x x\n"},
		{"not unique", map[string]any{"old_string": "x", "new_string": "y"}, true, "old_string occurs 3 times; include more surrounding lines", ""},
		{"replace all", map[string]any{"old_string": "x", "new_string": "y", "replace_all": true}, false, "replaced 3 occurrences", "one\ntwo\nthree y y y\n"},
		{"missing", map[string]any{"old_string": "four", "new_string": "4"}, true, "old_string was not found; read the file again and copy the text exactly", ""},
		{"whitespace matters", map[string]any{"old_string": "one \n", "new_string": "1"}, true, "was not found", ""},
		{"delete", map[string]any{"old_string": "one\n", "new_string": ""}, false, "replaced 1", "two\nthree x x x\n"},
		{"same text", map[string]any{"old_string": "one", "new_string": "one"}, true, "are the same", ""},
		{"empty old_string", map[string]any{"old_string": "", "new_string": "a"}, true, "use write", ""},
		{"no new_string", map[string]any{"old_string": "one"}, true, `missing argument "new_string"`, ""},
		{"replace_all not a bool", map[string]any{"old_string": "one", "new_string": "1", "replace_all": "yes"}, true, "must be true or false", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newToolsEnv(t, nil, nil)
			const orig = "one\ntwo\nthree x x x\n"
			writeFile(t, filepath.Join(e.project, "f.txt"), orig)
			args := map[string]any{"path": "f.txt"}
			for k, v := range tc.args {
				args[k] = v
			}
			expect(t, "edit", e.call(t, asTapestry, "edit", args), tc.isError, tc.want)
			want := tc.after
			if tc.isError {
				want = orig
			}
			if got := e.file(t, "f.txt"); got != want {
				t.Errorf("f.txt after edit = %q, want %q", got, want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		e := newToolsEnv(t, nil, nil)
		expect(t, "edit", e.call(t, asTapestry, "edit", map[string]any{"path": "nope.txt", "old_string": "a", "new_string": "b"}), true, "no such file; use write to create it")
	})
}

func TestToolBash(t *testing.T) {
	e := newToolsEnv(t, func(c *config.Config) { c.Tools.Bash.MaxOutputBytes = 100 }, nil)
	t.Setenv("WEAVE_TEST_API_KEY", "s3cret")
	t.Setenv("WEAVE_TEST_PLAIN", "visible")
	tests := []struct {
		name     string
		command  string
		isError  bool
		exitCode int
		want     string
	}{
		{"output and cwd", "echo hi; pwd; echo err >&2", false, 0, "hi\n" + e.tools.root + "\nerr\n"},
		{"exit code", "echo before; exit 3", true, 3, "before\n\n[exit code 3]\n"},
		{"secrets stay out", `echo "${WEAVE_TEST_API_KEY:-unset} $WEAVE_TEST_PLAIN"`, false, 0, "unset visible\n"},
		{"output cap", "head -c 5000 /dev/zero | tr '\\0' a", false, 0, strings.Repeat("a", 100) + "\n[output truncated: 100 of 5000 bytes shown (tools.bash.max_output_bytes); filter or redirect the output to see the rest]\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.call(t, asTapestry, "bash", map[string]any{"command": tc.command})
			if res.IsError != tc.isError || res.ExitCode != tc.exitCode {
				t.Errorf("bash(%q) = IsError %v exit %d, want %v %d", tc.command, res.IsError, res.ExitCode, tc.isError, tc.exitCode)
			}
			if res.Output != tc.want {
				t.Errorf("bash(%q) output = %q, want %q", tc.command, res.Output, tc.want)
			}
		})
	}
	t.Run("bad timeout", func(t *testing.T) {
		expect(t, "bash", e.call(t, asTapestry, "bash", map[string]any{"command": "true", "timeout": "soon"}), true, `seconds or a duration like "30s"`)
	})
}

// pidFromFile waits for a command to write a pid to path.
func pidFromFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a failure guard only
	for {
		b, err := os.ReadFile(path)
		if s := strings.TrimSpace(string(b)); err == nil && strings.HasSuffix(string(b), "\n") && s != "" {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("pid file %s = %q", path, b)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid written to %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestToolBashTimeoutKillsGrandchildren(t *testing.T) {
	// The pids this test reads are the host's: outside the sandbox, whose
	// own kill of everything is sandbox_linux_test.go's.
	e := newToolsEnv(t, func(c *config.Config) { c.Sandbox.Mode = "off" }, nil)
	// bash starts a shell that starts a sleep: the sleep is a grandchild.
	cmd := `bash -c 'sleep 300 & echo $! > gc.pid; wait' ; echo never`
	// A machine too busy to start the shells within the timeout is given a
	// longer one: the test is about what the timeout ends, not how soon a
	// shell starts.
	var res plugins.ToolResult
	var timeout time.Duration
	for _, timeout = range []time.Duration{2 * time.Second, 8 * time.Second, 32 * time.Second} {
		res = e.call(t, asTapestry, "bash", map[string]any{"command": cmd, "timeout": timeout.String()})
		if _, err := os.Stat(filepath.Join(e.project, "gc.pid")); err == nil {
			break
		}
	}
	expect(t, "bash timeout", res, true, "timed out after "+timeout.String()+" (the timeout argument) and was killed")
	if strings.Contains(res.Output, "never") {
		t.Errorf("bash output = %q: the command went on after the timeout", res.Output)
	}
	proctest.WaitGone(t, pidFromFile(t, filepath.Join(e.project, "gc.pid")))
}

func TestToolBashBackgroundChildDoesNotHoldTheCall(t *testing.T) {
	// The pids this test reads are the host's: outside the sandbox, whose
	// own kill of everything is sandbox_linux_test.go's.
	e := newToolsEnv(t, func(c *config.Config) { c.Sandbox.Mode = "off" }, nil)
	res := e.call(t, asTapestry, "bash", map[string]any{"command": "sleep 300 & echo $! > bg.pid; echo started"})
	if res.IsError || res.ExitCode != 0 || res.Output != "started\n" {
		t.Errorf("bash with a background child = %+v, want output %q and success", res, "started\n")
	}
	proctest.WaitGone(t, pidFromFile(t, filepath.Join(e.project, "bg.pid")))
}

func TestToolBashConfigTimeoutBoundsTheArgument(t *testing.T) {
	e := newToolsEnv(t, func(c *config.Config) { c.Tools.Bash.Timeout = 300 * time.Millisecond }, nil)
	res := e.call(t, asTapestry, "bash", map[string]any{"command": "sleep 300", "timeout": 3600})
	expect(t, "bash", res, true, "timed out after 300ms (tools.bash.timeout)")
}

func TestToolBashCancelKillsTheGroup(t *testing.T) {
	// The pids this test reads are the host's: outside the sandbox, whose
	// own kill of everything is sandbox_linux_test.go's.
	e := newToolsEnv(t, func(c *config.Config) { c.Sandbox.Mode = "off" }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := e.tools.Call(ctx, asTapestry, "s1", plugins.ToolCall{Tool: "bash", Args: map[string]any{"command": "sleep 300 & echo $! > bg.pid; wait"}})
		errc <- err
	}()
	pid := pidFromFile(t, filepath.Join(e.project, "bg.pid"))
	cancel()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("Call(bash) after cancel = %v, want a context error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Call(bash) did not return after cancel")
	}
	proctest.WaitGone(t, pid)
}

func TestToolGlob(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	for _, f := range []string{"src/b.go", "src/a.go", "src/deep/c.go", "src/deep/c_test.go", "docs/x.md", ".git/hooks/h.go"} {
		writeFile(t, filepath.Join(e.project, f), "")
	}
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"doublestar, sorted, relative", map[string]any{"pattern": "**/*.go"}, false, "src/a.go\nsrc/b.go\nsrc/deep/c.go\nsrc/deep/c_test.go\nsrc/main.go\n"},
		{"from a path", map[string]any{"pattern": "*_test.go", "path": "src/deep"}, false, "src/deep/c_test.go\n"},
		{"alternatives", map[string]any{"pattern": "{docs,src}/*.{md,go}"}, false, "docs/x.md\nsrc/a.go\nsrc/b.go\nsrc/main.go\n"},
		{"no match", map[string]any{"pattern": "**/*.rs"}, false, `no files match "**/*.rs" under .`},
		{"dot-dot refused", map[string]any{"pattern": "../**"}, true, `must not contain ".."`},
		{"absolute refused", map[string]any{"pattern": "/etc/*"}, true, "must be relative"},
		{"bad pattern", map[string]any{"pattern": "[a"}, true, "not a valid pattern"},
		{"path outside", map[string]any{"pattern": "*", "path": "../outside"}, true, "is outside the project"},
		{"path not a directory", map[string]any{"pattern": "*", "path": "src/a.go"}, true, "is not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.call(t, asLoom, "glob", tc.args)
			expect(t, "glob", res, tc.isError, tc.want)
			if !tc.isError && !strings.HasPrefix(tc.want, "no files") && res.Output != tc.want {
				t.Errorf("glob(%v) = %q, want %q", tc.args, res.Output, tc.want)
			}
		})
	}
	t.Run("capped", func(t *testing.T) {
		for i := range maxGlobResults + 5 {
			writeFile(t, filepath.Join(e.project, "many", fmt.Sprintf("f%04d.txt", i)), "")
		}
		res := e.call(t, asLoom, "glob", map[string]any{"pattern": "many/*.txt"})
		if n := strings.Count(res.Output, ".txt\n"); n != maxGlobResults {
			t.Errorf("glob(many/*.txt) lists %d files, want %d", n, maxGlobResults)
		}
		expect(t, "glob capped", res, false, "only the first 1000 matches are shown")
	})
}

func TestToolGrep(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	writeFile(t, filepath.Join(e.project, "src", "a.go"), "package a\n\nfunc Parse() {}\nfunc parse() {}\n")
	writeFile(t, filepath.Join(e.project, "docs", "a.md"), "Parse the plan\n")
	writeFile(t, filepath.Join(e.project, "bin.dat"), "Parse\x00binary")
	writeFile(t, filepath.Join(e.project, ".git", "config"), "Parse\n")
	symlink(t, filepath.Join(e.outside, "x.md"), filepath.Join(e.project, "out.md"))
	writeFile(t, filepath.Join(e.outside, "x.md"), "Parse outside\n")
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"file:line:text, skipping .git, binaries and links", map[string]any{"pattern": `Parse\b`}, false, "docs/a.md:1:Parse the plan\nsrc/a.go:3:func Parse() {}\n"},
		{"case-insensitive flag", map[string]any{"pattern": `(?i)func parse`}, false, "src/a.go:3:func Parse() {}\nsrc/a.go:4:func parse() {}\n"},
		{"glob filter by name", map[string]any{"pattern": "Parse", "glob": "*.md"}, false, "docs/a.md:1:Parse the plan\n"},
		{"glob filter by path", map[string]any{"pattern": "Parse", "glob": "src/**/*.go"}, false, "src/a.go:3:func Parse() {}\n"},
		{"one file", map[string]any{"pattern": "func", "path": "src/a.go"}, false, "src/a.go:3:func Parse() {}\nsrc/a.go:4:func parse() {}\n"},
		{"no match", map[string]any{"pattern": "Unparse"}, false, `no matches for "Unparse" under .`},
		{"invalid RE2", map[string]any{"pattern": `(?<=x)y`}, true, "not a valid regular expression (RE2 syntax"},
		{"path outside", map[string]any{"pattern": "x", "path": "../outside"}, true, "is outside the project"},
		{"missing path", map[string]any{"pattern": "x", "path": "nope"}, true, "path nope does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.call(t, asLoom, "grep", tc.args)
			expect(t, "grep", res, tc.isError, tc.want)
			if !tc.isError && !strings.HasPrefix(tc.want, "no matches") && res.Output != tc.want {
				t.Errorf("grep(%v) = %q, want %q", tc.args, res.Output, tc.want)
			}
		})
	}
	t.Run("capped", func(t *testing.T) {
		writeFile(t, filepath.Join(e.project, "many.txt"), strings.Repeat("hit\n", maxGrepMatches+10))
		res := e.call(t, asLoom, "grep", map[string]any{"pattern": "^hit$", "path": "many.txt"})
		if n := strings.Count(res.Output, ":hit\n"); n != maxGrepMatches {
			t.Errorf("grep(many.txt) shows %d matches, want %d", n, maxGrepMatches)
		}
		expect(t, "grep capped", res, false, "only the first 500 matches are shown")
	})
}

func TestToolWebFetch(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/doc":
			if r.Method != http.MethodGet {
				http.Error(w, "GET only", http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "the docs")
		case "/big":
			fmt.Fprint(w, strings.Repeat("b", 5000))
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case "/moved":
			http.Redirect(w, r, "/doc", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	defer close(release) // before srv.Close, which waits for /slow
	e := newToolsEnv(t, func(c *config.Config) {
		c.Tools.WebFetch.MaxBytes = 1000
		// Long enough for the answers that come at once, even on a busy
		// machine; the /slow case waits it out.
		c.Tools.WebFetch.Timeout = 2 * time.Second
		// The test server is on loopback, which webfetch refuses unless
		// allowed (webfetch_policy_test.go tests the refusals).
		c.Tools.WebFetch.Allow = []string{"127.0.0.1"}
	}, nil)
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    []string
	}{
		{"GET", map[string]any{"url": srv.URL + "/doc"}, false, []string{"status: 200 OK", "content-type: text/plain", "\n\nthe docs"}},
		{"redirect followed", map[string]any{"url": srv.URL + "/moved"}, false, []string{"GET " + srv.URL + "/doc", "the docs"}},
		{"size cap", map[string]any{"url": srv.URL + "/big"}, false, []string{strings.Repeat("b", 1000) + "\n[body cut at 1000 bytes (tools.webfetch.max_bytes)]"}},
		{"http error status", map[string]any{"url": srv.URL + "/missing"}, true, []string{"404 Not Found"}},
		{"timeout", map[string]any{"url": srv.URL + "/slow"}, true, []string{"no answer within 2s (tools.webfetch.timeout)"}},
		{"POST refused", map[string]any{"url": srv.URL + "/doc", "method": "post"}, true, []string{"only makes GET requests, not POST"}},
		{"file URL refused", map[string]any{"url": "file:///etc/passwd"}, true, []string{"not an http or https URL"}},
		{"no host", map[string]any{"url": "http:///x"}, true, []string{"has no host"}},
		{"no url", map[string]any{}, true, []string{`missing argument "url"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.call(t, Caller{Agent: "spindle"}, "webfetch", tc.args)
			expect(t, "webfetch", res, tc.isError, tc.want...)
			if tc.name == "size cap" && strings.Contains(res.Output, strings.Repeat("b", 1001)) {
				t.Errorf("webfetch(/big) returned more than max_bytes")
			}
		})
	}
	t.Run("disabled", func(t *testing.T) {
		off := newToolsEnv(t, func(c *config.Config) { c.Tools.WebFetch.Enabled = false }, nil)
		res := off.call(t, Caller{Agent: "spindle"}, "webfetch", map[string]any{"url": srv.URL + "/doc"})
		expect(t, "webfetch disabled", res, true, "webfetch is turned off in this project (tools.webfetch.enabled: false)")
		if strings.Contains(res.Output, "the docs") {
			t.Errorf("disabled webfetch fetched: %q", res.Output)
		}
	})
}

type recordingDelegator struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (d *recordingDelegator) Delegate(_ context.Context, c Caller, _, agent, prompt string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, fmt.Sprintf("%s -> %s (%s): %s", c, agent, c.Delegated(agent), prompt))
	if d.err != nil {
		return "", d.err
	}
	return "found it in src/main.go:1", nil
}

func TestToolTask(t *testing.T) {
	d := &recordingDelegator{}
	e := newToolsEnv(t, nil, nil, WithDelegator(d))
	res := e.call(t, asLoom, "task", map[string]any{"agent": "Thread", "prompt": "where is main?"})
	expect(t, "task", res, false, "found it in src/main.go:1")
	if diff := cmp.Diff([]string{"loom -> thread (loom > thread): where is main?"}, d.calls); diff != "" {
		t.Errorf("delegations (-want +got):\n%s", diff)
	}
	denied := e.call(t, asLoom, "task", map[string]any{"agent": "tapestry", "prompt": "run it"})
	if !denied.Denied || len(d.calls) != 1 {
		t.Errorf("task to tapestry = %+v with %d delegations, want denied before delegating", denied, len(d.calls))
	}
	expect(t, "task without prompt", e.call(t, asLoom, "task", map[string]any{"agent": "thread"}), true, "self-contained instruction")
	d.err = fmt.Errorf("model unavailable")
	expect(t, "task failing", e.call(t, asLoom, "task", map[string]any{"agent": "weft", "prompt": "review"}), true, "weft could not finish: model unavailable")
	none := newToolsEnv(t, nil, nil)
	expect(t, "task without delegator", none.call(t, asLoom, "task", map[string]any{"agent": "thread", "prompt": "x"}), true, "delegation is not available")
}

func TestToolTodoWrite(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	todos := []any{
		map[string]any{"content": "read the plan", "status": "completed"},
		map[string]any{"content": "write the handler", "status": "in_progress"},
		map[string]any{"content": "run the tests"},
	}
	res := e.call(t, asTapestry, "todowrite", map[string]any{"todos": todos})
	want := "- [x] read the plan\n- [~] write the handler\n- [ ] run the tests\n1/3 done\n"
	if res.IsError || res.Output != want {
		t.Errorf("todowrite = %+v, want output %q", res, want)
	}
	if diff := cmp.Diff([]plugins.PlanTask{{Number: 1, Title: "read the plan", Done: true}, {Number: 2, Title: "write the handler"}, {Number: 3, Title: "run the tests"}}, e.tools.Todos("s1")); diff != "" {
		t.Errorf("Todos(s1) (-want +got):\n%s", diff)
	}
	if got := e.tools.Todos("other"); len(got) != 0 {
		t.Errorf("Todos(other) = %v, want a separate, empty list", got)
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"not a list", map[string]any{"todos": "x"}, "must be a list of {content, status}"},
		{"bad status", map[string]any{"todos": []any{map[string]any{"content": "a", "status": "done"}}}, `has status "done"; want pending, in_progress or completed`},
		{"no content", map[string]any{"todos": []any{map[string]any{"status": "pending"}}}, "todos[0] has no content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, "todowrite", e.call(t, asTapestry, "todowrite", tc.args), true, tc.want)
		})
	}
	if got := e.tools.Todos("s1"); len(got) != 3 {
		t.Errorf("a refused todowrite changed the list: %v", got)
	}
	e.tools.EndSession("s1")
	if got := e.tools.Todos("s1"); len(got) != 0 {
		t.Errorf("Todos(s1) after EndSession = %v, want empty", got)
	}
}

const checkPlan = "# Login\n\n## TODOs\n\n- [ ] 1. Add the handler\n- [ ] 2. Add the tests\n- [x] 3. Add the docs\n- [ ] 4. Add the handler tests\n"

func TestToolPlanCheck(t *testing.T) {
	setup := func(t *testing.T, active bool) *toolsEnv {
		t.Helper()
		e := newToolsEnv(t, nil, nil)
		path := filepath.Join(e.project, ".weave", "plans", "login.md")
		writeFile(t, path, checkPlan)
		if active {
			st := &plans.State{ActivePlan: path, PlanName: "login", Agent: "tapestry", StartedAt: time.Now()}
			if err := plans.NewStore(filepath.Join(e.project, ".weave")).Save(st); err != nil {
				t.Fatal(err)
			}
		}
		return e
	}
	tests := []struct {
		name    string
		active  bool
		args    map[string]any
		isError bool
		want    string
		ticked  []int // task numbers done afterwards
	}{
		{"by number, active plan", true, map[string]any{"task": float64(2)}, false, `ticked task 2 (Add the tests) of login (2/4 done)`, []int{2, 3}},
		{"by number as text", true, map[string]any{"task": "1"}, false, "ticked task 1", []int{1, 3}},
		{"by exact title", true, map[string]any{"task": "add the handler"}, false, "ticked task 1", []int{1, 3}},
		{"by unique part of a title", true, map[string]any{"task": "handler tests"}, false, "ticked task 4", []int{3, 4}},
		{"named plan", false, map[string]any{"task": 1, "plan": "login"}, false, "ticked task 1", []int{1, 3}},
		{"already done", true, map[string]any{"task": 3}, false, "already ticked", []int{3}},
		{"ambiguous title", true, map[string]any{"task": "handler"}, true, `"handler" matches 2 tasks of login`, []int{3}},
		{"unknown number", true, map[string]any{"task": 9}, true, "login has no task numbered 9 (its tasks: 1. Add the handler; 2. Add the tests", []int{3}},
		{"unknown title", true, map[string]any{"task": "deploy"}, true, `no task titled "deploy"`, []int{3}},
		{"no task", true, map[string]any{}, true, `missing argument "task"`, []int{3}},
		{"no active plan", false, map[string]any{"task": 1}, true, "no plan is active (no .weave/state.json); name the plan with the plan argument", []int{3}},
		{"unknown plan", false, map[string]any{"task": 1, "plan": "nope"}, true, `no plan named "nope"`, []int{3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, tc.active)
			expect(t, "plan_check", e.call(t, asTapestry, "plan_check", tc.args), tc.isError, tc.want)
			p, err := plans.Load(filepath.Join(e.project, ".weave", "plans", "login.md"))
			if err != nil {
				t.Fatal(err)
			}
			var done []int
			for _, tk := range p.Tasks {
				if tk.Done {
					done = append(done, tk.Number)
				}
			}
			if diff := cmp.Diff(tc.ticked, done); diff != "" {
				t.Errorf("done tasks after plan_check(%v) (-want +got):\n%s", tc.args, diff)
			}
		})
	}
	t.Run("only the checkbox byte changes", func(t *testing.T) {
		e := setup(t, true)
		e.call(t, asTapestry, "plan_check", map[string]any{"task": 1})
		want := strings.Replace(checkPlan, "- [ ] 1.", "- [x] 1.", 1)
		if got := e.file(t, ".weave/plans/login.md"); got != want {
			t.Errorf("plan after ticking = %q, want %q", got, want)
		}
	})
	t.Run("the last task says the plan is done", func(t *testing.T) {
		e := setup(t, true)
		for _, n := range []int{1, 2} {
			e.call(t, asTapestry, "plan_check", map[string]any{"task": n})
		}
		expect(t, "plan_check", e.call(t, asTapestry, "plan_check", map[string]any{"task": 4}), false, "(4/4 done); every task of the plan is done")
	})
}

func TestToolsDenialIsAResultAndAnEvent(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	res := e.call(t, Caller{Agent: "thread", Chain: []string{"loom", "thread"}}, "write", map[string]any{"path": "src/main.go", "content": "x"})
	if !res.Denied || !res.IsError {
		t.Fatalf("write by thread = %+v, want a denied error result", res)
	}
	if want := "denied by the capability matrix (thread has no write)"; res.Output != want || res.Reason != want {
		t.Errorf("denied: output %q, reason %q; want both %q", res.Output, res.Reason, want)
	}
	if got := e.file(t, "src/main.go"); got != "package main\n" {
		t.Errorf("src/main.go = %q after a denied write", got)
	}
	evs := e.events.all()
	if len(evs) != 1 {
		t.Fatalf("events = %v, want one denial", evs)
	}
	ev := evs[0]
	ev.Time = time.Time{}
	want := plugins.Event{Name: EventToolDenied, SessionID: "s1", Agent: "thread", Cwd: e.project, Tool: "write",
		Args: map[string]any{"path": "src/main.go", "content": "x"},
		Data: map[string]any{"by": "gate", "chain": "loom > thread", "reason": "denied by the capability matrix (thread has no write)"}}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Errorf("denial event (-want +got):\n%s", diff)
	}
}

func TestToolsFor(t *testing.T) {
	e := newToolsEnv(t, nil, nil)
	call := e.tools.For(Caller{Agent: "weft", Chain: []string{"loom", "weft"}}, "s9")
	res, err := call(context.Background(), plugins.ToolCall{Tool: "edit", Args: map[string]any{"path": "src/main.go", "old_string": "main", "new_string": "x"}})
	if err != nil || !res.Denied {
		t.Errorf("For(weft)(edit) = %+v, %v; want denied", res, err)
	}
	if evs := e.events.all(); len(evs) != 1 || evs[0].SessionID != "s9" || evs[0].Data["chain"] != "loom > weft" {
		t.Errorf("events = %+v, want one denial in session s9 for loom > weft", evs)
	}
	res, err = call(context.Background(), plugins.ToolCall{Tool: "grep", Args: map[string]any{"pattern": "package"}})
	if err != nil || res.IsError || res.Output != "src/main.go:1:package main\n" {
		t.Errorf("For(weft)(grep) = %+v, %v; want the match", res, err)
	}
}

func TestNewToolsErrors(t *testing.T) {
	g, _ := NewGate(nil, nil)
	if _, err := New(t.TempDir(), nil, nil, nil); err == nil || !strings.Contains(err.Error(), "NewGate") {
		t.Errorf("NewTools without a gate = %v, want an error naming NewGate", err)
	}
	if _, err := New(filepath.Join(t.TempDir(), "nope"), nil, g, nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("NewTools(missing dir) = %v, want an error", err)
	}
	var nilPipeline *hooks.Pipeline
	tools, err := New(t.TempDir(), nil, g, nilPipeline)
	if err != nil {
		t.Fatalf("NewTools(typed nil pipeline): %v", err)
	}
	if _, err := tools.Call(context.Background(), asLoom, "s", plugins.ToolCall{Tool: "glob", Args: map[string]any{"pattern": "*"}}); err != nil {
		t.Errorf("Call with a typed nil pipeline = %v, want it treated as no hooks", err)
	}
}

// TestToolResultCap: a result past MaxResultBytes (a bash cap set higher)
// reaches the model with its start, its end and a note of what was cut.
func TestToolResultCap(t *testing.T) {
	e := newToolsEnv(t, func(c *config.Config) { c.Tools.Bash.MaxOutputBytes = 16 << 20 }, nil)
	res := e.call(t, asTapestry, "bash", map[string]any{"command": "printf BEGIN; head -c 6000000 /dev/zero | tr '\\0' b; printf END"})
	if res.IsError || len(res.Output) > MaxResultBytes {
		t.Fatalf("bash = IsError %v, %d bytes; want a result of at most %d bytes", res.IsError, len(res.Output), MaxResultBytes)
	}
	if !strings.HasPrefix(res.Output, "BEGIN") || !strings.HasSuffix(res.Output, "END") || !strings.Contains(res.Output, "bytes cut from the middle of this tool output of 6000008 bytes") {
		t.Errorf("bash output %.40q...%.60q; want its start, its end and a note of the cut", res.Output, res.Output[len(res.Output)-60:])
	}
}
