package atomicfile

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A Writer's writes are WriteFile's: the content is the last written, the
// mode of a file there is kept, a link is refused and left alone, and no
// file is left beside the target, during the writes or after Close.
func TestWriterWritesAsWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	w := NewWriter(path)
	for i := range 50 {
		data := []byte(strings.Repeat(strconv.Itoa(i), i+1))
		if err := w.WriteFile(data, 0o640); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
			t.Fatalf("after write %d the file holds %q, want %q", i, got, data)
		}
		assertOnlyFile(t, dir, "state.json")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	if runtime.GOOS == "linux" && w.plain {
		t.Error("the writer fell back to WriteFile: its files were not made ahead")
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile([]byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v after a write, want the file's 0600 kept", fi.Mode().Perm())
	}

	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile([]byte("through"), 0o644); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("write over a link = %v, want it refused", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the link's target holds %q, want it untouched", b)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile([]byte("again"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile([]byte("after close"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "after close" {
		t.Errorf("file holds %q after Close and a write", got)
	}
	assertOnlyFile(t, dir, "state.json")
}

// Writes at once from several goroutines each land whole.
func TestWriterConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	w := NewWriter(path)
	defer w.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				if err := w.WriteFile(fmt.Appendf(nil, "%d-%d", g, i), 0o644); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	got, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(got), "-24") {
		t.Errorf("file holds %q, want one goroutine's last write", got)
	}
	assertOnlyFile(t, dir, "f")
}

// A directory moved away between writes: the next write goes where the
// path now leads, as WriteFile's would.
func TestWriterFollowsItsPath(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f")
	w := NewWriter(path)
	defer w.Close()
	if err := w.WriteFile([]byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile([]byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "two" {
		t.Errorf("new directory's file holds %q, want two", got)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "moved", "f")); string(got) != "one" {
		t.Errorf("moved directory's file holds %q, want one", got)
	}
	assertOnlyFile(t, dir, "f")
	assertOnlyFile(t, filepath.Join(root, "moved"), "f")
}

const writerHelperEnv = "WEAVE_ATOMICFILE_WRITER_HELPER"

// TestWriterHelper writes its file over and over until killed: the process
// TestWriterKilled kills.
func TestWriterHelper(t *testing.T) {
	path := os.Getenv(writerHelperEnv)
	if path == "" {
		t.Skip("a helper process of TestWriterKilled")
	}
	w := NewWriter(path)
	for i := 0; ; i++ {
		data := bytes.Repeat(fmt.Appendf(nil, "%08d", i), 512)
		if err := w.WriteFile(data, 0o644); err != nil {
			t.Fatal(err)
		}
		if i == 20 {
			if err := os.WriteFile(path+".started", nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A writer killed at any moment leaves its file whole (one write's bytes,
// never a mix), and nothing beside it that RemoveTemps does not remove.
func TestWriterKilled(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for trial := range 5 {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		cmd := exec.Command(exe, "-test.run", "^TestWriterHelper$")
		cmd.Env = append(os.Environ(), writerHelperEnv+"="+path)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		for started := false; !started; {
			select {
			case <-exited:
				t.Fatalf("helper exited:\n%s", out.String())
			case <-time.After(time.Millisecond):
				_, err := os.Stat(path + ".started")
				started = err == nil
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 8*512 || !bytes.Equal(got, bytes.Repeat(got[:8], 512)) {
			t.Fatalf("trial %d: the file holds %d bytes, not one write's", trial, len(got))
		}
		if _, err := RemoveTemps(dir); err != nil {
			t.Fatal(err)
		}
		assertOnlyFile(t, dir, "f", "f.started")
	}
}
