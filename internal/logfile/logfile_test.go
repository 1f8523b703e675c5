package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/safefile"
)

func TestFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weave.log")
	l, err := Open(filepath.Dir(path), path, 1000, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	line := strings.Repeat("x", 99) + "\n"
	for range 50 { // 5,000 bytes through a 1,000-byte file
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"weave.log", "weave.log.1", "weave.log.2"} {
		fi, err := os.Stat(filepath.Join(filepath.Dir(path), name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fi.Size() > 1000 || fi.Size()%100 != 0 {
			t.Errorf("%s is %d bytes, want at most 1000 and whole records", name, fi.Size())
		}
	}
	if _, err := os.Stat(path + ".3"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("weave.log.3 exists (%v), want only 2 backups kept", err)
	}
}

func TestFileFollowsAnotherProcessRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weave.log")
	a, err := Open(filepath.Dir(path), path, 300, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(filepath.Dir(path), path, 300, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec := []byte(strings.Repeat("a", 99) + "\n")
	for range 3 {
		a.Write(rec)
	}
	a.Write(rec) // a rotates
	for range 3 {
		b.Write(rec) // b's count says full: it sees a rotated, and reopens
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files = %v, want weave.log and one backup", names)
	}
}

func TestOpenRefusesALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	path := filepath.Join(dir, "weave.log")
	os.Symlink(victim, path)
	if _, err := Open(filepath.Dir(path), path, 1<<20, 1); !errors.Is(err, safefile.ErrSymlink) {
		t.Errorf("Open(link) error = %v, want ErrSymlink", err)
	}
}

func TestBoundedHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Bounded(slog.NewTextHandler(&buf, nil), 100))
	huge := strings.Repeat("r", 1<<20)
	log.Info(huge, "reason", huge, "err", errors.New(huge), "data", map[string]any{"k": huge}, "n", 3)
	if buf.Len() > 1000 {
		t.Errorf("a record with four 1 MiB texts logged %d bytes, want under 1000", buf.Len())
	}
	if !strings.Contains(buf.String(), "n=3") || !strings.Contains(buf.String(), "more bytes cut") {
		t.Errorf("record = %q, want the small value kept and the cut noted", buf.String())
	}
}

// Logs opens one log after another in a directory that tasks change in
// between: each log has what was written to it, a log there already is
// appended to, a planted link is refused without writing through it, a
// directory removed is made again, and no file is left that no log names
// (the next log is made ahead of its name).
func TestLogsOpensEachLogAsOpenWould(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := OpenLogs(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".weave", "logs", "p")
	write := func(name, text string) error {
		f, err := ls.Open(filepath.Join(dir, name), 1<<20, 1)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Write([]byte(text))
		return err
	}
	for i, name := range []string{"1.log", "2.log", "3.log"} {
		if err := write(name, strings.Repeat("x", i+1)); err != nil {
			t.Fatalf("log %s: %v", name, err)
		}
	}
	if err := write("2.log", "again"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "4.log")); err != nil {
		t.Fatal(err)
	}
	if err := write("4.log", "through"); !errors.Is(err, safefile.ErrSymlink) && !errors.Is(err, safefile.ErrOutside) {
		t.Errorf("a log planted as a link = %v, want it refused", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := write("5.log", "five"); err != nil {
		t.Fatalf("log in a removed directory: %v", err)
	}
	if err := write("6.log", "six"); err != nil {
		t.Fatal(err)
	}
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim = %q, want it untouched", b)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "5.log,6.log" {
		t.Errorf("logs left = %v, want 5.log and 6.log", names)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "6.log")); string(b) != "six" {
		t.Errorf("6.log = %q, want six", b)
	}
}

func TestLogsAppendsToALogThere(t *testing.T) {
	root := t.TempDir()
	ls, err := OpenLogs(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	path := filepath.Join(root, "logs", "a.log")
	for _, text := range []string{"one\n", "two\n"} {
		f, err := ls.Open(path, 1<<20, 1)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(text))
		f.Close()
	}
	if b, _ := os.ReadFile(path); string(b) != "one\ntwo\n" {
		t.Errorf("log = %q, want both attempts", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the logs directory holds %d files, want 1", len(entries))
	}
}

// A hard link planted where a log goes, to a file outside the project, is
// refused before anything is written: through Logs and through Open.
func TestLogRefusesAHardLink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("hard links are not looked for off Unix")
	}
	root := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".weave", "logs", "p")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ls, err := OpenLogs(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	// A first log, so that Logs has the next one made ahead.
	f, err := ls.Open(filepath.Join(dir, "1.log"), 1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for i, open := range []func(string) (*File, error){
		func(p string) (*File, error) { return ls.Open(p, 1<<20, 1) },
		func(p string) (*File, error) { return Open(root, p, 1<<20, 1) },
	} {
		path := filepath.Join(dir, fmt.Sprintf("linked%d.log", i))
		if err := os.Link(victim, path); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
		if f, err := open(path); err == nil {
			f.Write([]byte("through"))
			f.Close()
			t.Errorf("open %d: a hard link to a file outside was opened as a log", i)
		} else if !strings.Contains(err.Error(), "hard link") {
			t.Errorf("open %d: %v, want it to say the log is a hard link", i, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("victim = %q, want it untouched", b)
	}
}
