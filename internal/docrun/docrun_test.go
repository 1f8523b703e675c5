//go:build unix

package docrun

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weavehq/weave/internal/srcscan"
)

// pages are the markdown pages whose runnable blocks run: the front page
// and every page of docs/.
func pages(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunnableBlocks runs every `sh run` block through the built binary in
// a temporary project, offline, and fails on a block that exits non-zero,
// runs past its timeout or leaves a process of its own running.
func TestRunnableBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds weave and runs the documentation's blocks")
	}
	root := srcscan.ModuleRoot(t)
	type page struct {
		rel    string
		blocks []Block
	}
	var todo []page
	for _, p := range pages(t, root) {
		var run []Block
		for _, b := range Blocks(read(t, p)) {
			if b.Runnable() {
				run = append(run, b)
			}
		}
		if len(run) > 0 {
			rel, _ := filepath.Rel(root, p)
			todo = append(todo, page{rel, run})
		}
	}
	if len(todo) == 0 || todo[0].rel != "README.md" || len(todo[0].blocks) < 2 {
		t.Fatalf("README.md has no runnable first-plan and fake-model blocks (fences with info string \"sh run\"); pages with runnable blocks: %v", todo)
	}

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "weave"), "./cmd/weave")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/weave: %v\n%s", err, out)
	}
	home := t.TempDir()
	env := []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + t.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, "cache"),
		"XDG_RUNTIME_DIR=" + filepath.Join(home, "run"),
		"LANG=C.UTF-8",
		"NO_COLOR=1",
	}
	for _, p := range todo {
		t.Run(p.rel, func(t *testing.T) {
			dir := t.TempDir()
			for _, b := range p.blocks {
				if out, err := runBlock(t, dir, env, b.Text); err != nil {
					t.Fatalf("%s:%d: the block\n%s\nfailed: %v\noutput:\n%s", p.rel, b.Line, b.Text, err, out)
				}
			}
		})
	}
}

// runBlock runs one block with sh -e in its own process group and returns
// its output. A block still running after a minute is killed, and so is
// whatever a block left running, which is an error: a block stops what it
// starts.
func runBlock(t *testing.T, dir string, env []string, text string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Output goes to a file, not a pipe, so that a process the block left
	// behind cannot keep Wait from returning.
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", text)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	runErr := cmd.Run()
	if ctx.Err() != nil {
		runErr = errors.New("still running after a minute")
	}
	if runErr == nil && !groupEnds(cmd.Process.Pid, 10*time.Second) {
		runErr = errors.New("it left a process running (a block stops what it starts in the background)")
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	b, _ := os.ReadFile(out.Name())
	return string(b), runErr
}

// groupEnds waits for the process group to have no live process (a
// process the block signalled may take a moment to exit), at most for the
// guard time, and reports whether it ended.
func groupEnds(pgid int, guard time.Duration) bool {
	deadline := time.Now().Add(guard)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// groupAlive reports whether a process of the group is alive. On Linux it
// reads /proc, where a zombie (exited, not yet reaped by whoever adopted
// it) does not count; elsewhere it asks kill.
func groupAlive(pgid int) bool {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) >= 3 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// TestFrontPageCommandsAreCIs: the front page's two commands, the
// quickstart and the test command, are the ones .ci/run runs.
func TestFrontPageCommandsAreCIs(t *testing.T) {
	root := srcscan.ModuleRoot(t)
	blocks := Blocks(read(t, filepath.Join(root, "README.md")))
	if len(blocks) == 0 {
		t.Fatal("README.md has no code block")
	}
	ci := read(t, filepath.Join(root, ".ci", "run"))
	var cmds []string
	for _, line := range strings.Split(blocks[0].Text, "\n") {
		if cmd, _, _ := strings.Cut(line, "#"); strings.TrimSpace(cmd) != "" {
			cmds = append(cmds, strings.TrimSpace(cmd))
		}
	}
	if len(cmds) != 2 || cmds[0] != "./scripts/quickstart.sh" || cmds[1] != "go test ./..." {
		t.Fatalf("README.md's first block = %q, want the quickstart and the test command", cmds)
	}
	for _, cmd := range cmds {
		if !strings.Contains(ci, "\n"+cmd) {
			t.Errorf(".ci/run does not run the front page's %q", cmd)
		}
	}
}

// TestLinksResolve: every relative link of README.md and docs/*.md names a
// file that exists, so that moving a section never leaves a dead link.
func TestLinksResolve(t *testing.T) {
	root := srcscan.ModuleRoot(t)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, p := range pages(t, root) {
		for _, m := range link.FindAllStringSubmatch(read(t, p), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), target)); err != nil {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
			}
		}
	}
}

func TestBlocks(t *testing.T) {
	page := "# P\n\n```sh run\nweave init\n```\n\n````markdown\n- [ ] 1. x\n  ```sh run\n  false\n  ```\n````\n\n  ~~~sh verify\n  true\n  ~~~\n```sh\nlast\n"
	got := Blocks(page)
	if len(got) != 4 {
		t.Fatalf("Blocks = %+v, want 4 blocks", got)
	}
	want := []struct {
		line     int
		info     string
		text     string
		runnable bool
	}{
		{3, "sh run", "weave init\n", true},
		{7, "markdown", "- [ ] 1. x\n  ```sh run\n  false\n  ```\n", false},
		{14, "sh verify", "true\n", false},
		{17, "sh", "last\n\n", false},
	}
	for i, w := range want {
		b := got[i]
		if b.Line != w.line || b.Info != w.info || b.Text != w.text || b.Runnable() != w.runnable {
			t.Errorf("block %d = %+v (runnable %v), want %+v", i, b, b.Runnable(), w)
		}
	}
}
