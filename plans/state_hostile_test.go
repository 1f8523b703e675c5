package plans

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestStoreSaveCapsTexts(t *testing.T) {
	s := newStore(t)
	huge := strings.Repeat("reason ", 1<<20) // 7 MiB, as a runaway plugin might send
	st := &State{ActivePlan: "/p/.weave/plans/x.md", LastError: huge, PausedReason: huge}
	st.Record("1").LastError = huge
	if err := s.Save(st); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 4*MaxStoredText {
		t.Errorf("state.json is %d bytes after saving 3 runaway texts, want at most %d", fi.Size(), 4*MaxStoredText)
	}
	got, _, err := s.Load()
	if err != nil || got == nil {
		t.Fatalf("Load = %v, %v", got, err)
	}
	if !strings.HasPrefix(got.LastError, "reason reason") || !strings.Contains(got.LastError, "more bytes cut") {
		t.Errorf("LastError = %.60q…, want the start of the text and a note of the cut", got.LastError)
	}
}

func TestLockRefusesWhatIsNotARegularFile(t *testing.T) {
	tests := []struct {
		name string
		make func(lock, victim string) error
		want string
	}{
		{"symlink", func(lock, victim string) error { return os.Symlink(victim, lock) }, "symbolic link"},
		{"fifo", func(lock, _ string) error { return syscall.Mkfifo(lock, 0o644) }, "named pipe"},
		{"directory", func(lock, _ string) error { return os.Mkdir(lock, 0o755) }, "directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			victim := filepath.Join(filepath.Dir(s.dir), "victim.txt")
			if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(s.lockPath(), victim); err != nil {
				t.Fatal(err)
			}
			release, err := s.Lock()
			if err == nil {
				_ = release()
				t.Fatalf("Lock with weave.lock a %s succeeded, want a refusal", tc.name)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Lock error = %v, want it to say %q", err, tc.want)
			}
			if b, _ := os.ReadFile(victim); string(b) != "precious" {
				t.Errorf("victim = %q, want it untouched", b)
			}
			if s.Holder() != 0 {
				t.Errorf("Holder() = %d through a %s, want 0", s.Holder(), tc.name)
			}
		})
	}
}
