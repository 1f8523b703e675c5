package plans

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/internal/proc"
)

func newStore(t testing.TB) *Store {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".weave")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return NewStore(dir)
}

func TestStoreRoundTrip(t *testing.T) {
	s := newStore(t)
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	s.now = func() time.Time { return now }
	if st, warn, err := s.Load(); st != nil || warn != "" || err != nil {
		t.Fatalf("Load(missing) = %v, %q, %v, want nil, \"\", nil", st, warn, err)
	}
	st := &State{
		ActivePlan: "/p/.weave/plans/x.md",
		StartedAt:  now.Add(-time.Hour),
		SessionIDs: []string{"s1", "s2"},
		PlanName:   "x",
		Agent:      "tapestry",
		StartSHA:   strings.Repeat("a", 40),
		Paused:     true,
		InFlight:   &InFlight{Key: "2", Number: 2, Title: "Two", StartedAt: now.Add(-time.Minute)},
		LastError:  "boom",
	}
	r := st.Record("2")
	r.Attempts, r.LastError = 2, "exit status 1"
	if err := s.Save(st); err != nil {
		t.Fatalf("Save = %v", err)
	}
	if st.SchemaVersion != SchemaVersion || !st.UpdatedAt.Equal(now) {
		t.Errorf("Save set SchemaVersion %d UpdatedAt %v, want %d %v", st.SchemaVersion, st.UpdatedAt, SchemaVersion, now)
	}
	got, warn, err := s.Load()
	if err != nil || warn != "" {
		t.Fatalf("Load = %q, %v", warn, err)
	}
	if diff := cmp.Diff(st, got); diff != "" {
		t.Errorf("Load after Save (-saved +loaded):\n%s", diff)
	}
	raw := string(readFile(t, s.Path()))
	for _, key := range []string{`"schema_version": 1`, `"active_plan"`, `"started_at"`, `"session_ids"`, `"plan_name"`, `"agent"`, `"in_flight"`, `"attempts": 2`} {
		if !strings.Contains(raw, key) {
			t.Errorf("state.json lacks %s:\n%s", key, raw)
		}
	}
	if err := s.Clear(); err != nil {
		t.Fatalf("Clear = %v", err)
	}
	if err := s.Clear(); err != nil {
		t.Fatalf("Clear twice = %v", err)
	}
	if st, _, _ := s.Load(); st != nil {
		t.Errorf("Load after Clear = %+v, want nil", st)
	}
}

func TestStoreLoadCorrupt(t *testing.T) {
	tests := []struct {
		name, content, why string
	}{
		{"garbage", "\x00\xffnot json at all", "not valid JSON"},
		{"empty file", "", "not valid JSON"},
		{"truncated", `{"schema_version": 1, "active_pl`, "not valid JSON"},
		{"null", "null", "empty"},
		{"no active plan", `{"schema_version": 1}`, "no active_plan"},
		{"wrong types", `{"active_plan": 3}`, "not valid JSON"},
		{"negative version", `{"schema_version": -1, "active_plan": "/x"}`, "schema_version -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			s.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
			if err := os.WriteFile(s.Path(), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			// Twice: the second corrupt file must not overwrite the first.
			for i, suffix := range []string{"", "-1"} {
				if i == 1 {
					if err := os.WriteFile(s.Path(), []byte(tt.content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				st, warn, err := s.Load()
				if st != nil || err != nil {
					t.Fatalf("Load(%q) = %+v, %v, want nil state and no error", tt.content, st, err)
				}
				aside := s.Path() + ".corrupt-20260102T030405Z" + suffix
				if !strings.Contains(warn, tt.why) || !strings.Contains(warn, aside) {
					t.Errorf("warning = %q, want it to say %q and name %s", warn, tt.why, aside)
				}
				if got := string(readFile(t, aside)); got != tt.content {
					t.Errorf("moved-aside file = %q, want the original %q", got, tt.content)
				}
				if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("state.json still there after Load: %v", err)
				}
			}
		})
	}
}

func TestStoreLoadCompatible(t *testing.T) {
	s := newStore(t)
	// As written by tools that predate schema_version, with unknown fields.
	old := `{"active_plan": "/p/x.md", "started_at": "2026-01-01T00:00:00Z", "session_ids": ["a"], "plan_name": "x", "agent": "tapestry", "extra": true}`
	if err := os.WriteFile(s.Path(), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	st, warn, err := s.Load()
	if err != nil || warn != "" || st == nil {
		t.Fatalf("Load = %+v, %q, %v", st, warn, err)
	}
	if st.SchemaVersion != 1 || st.PlanName != "x" || len(st.SessionIDs) != 1 {
		t.Errorf("Load = %+v", st)
	}
}

func TestStoreLoadNewer(t *testing.T) {
	s := newStore(t)
	newer := `{"schema_version": 99, "active_plan": "/p/x.md"}`
	if err := os.WriteFile(s.Path(), []byte(newer), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "upgrade weave") {
		t.Errorf("Load(newer schema) = %v, want an error saying to upgrade", err)
	}
	if got := string(readFile(t, s.Path())); got != newer {
		t.Errorf("state.json = %q, want it untouched", got)
	}
}

func TestStoreNoWeaveDir(t *testing.T) {
	s := NewStore(filepath.Join(t.TempDir(), ".weave"))
	if err := s.Save(&State{ActivePlan: "/x"}); err == nil || !strings.Contains(err.Error(), "weave init") {
		t.Errorf("Save without .weave = %v, want an error saying to run weave init", err)
	}
	if _, err := s.Lock(); err == nil || !strings.Contains(err.Error(), "weave init") {
		t.Errorf("Lock without .weave = %v, want an error saying to run weave init", err)
	}
	if st, warn, err := s.Load(); st != nil || warn != "" || err != nil {
		t.Errorf("Load without .weave = %v, %q, %v, want nothing", st, warn, err)
	}
}

func TestLockInProcess(t *testing.T) {
	s := newStore(t)
	release, err := s.Lock()
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	_, err = NewStore(filepath.Dir(s.Path())).Lock()
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second Lock = %v, want a LockedError naming pid %d", err, os.Getpid())
	}
	if err := release(); err != nil {
		t.Fatalf("release = %v", err)
	}
	release2, err := s.Lock()
	if err != nil {
		t.Fatalf("Lock after release = %v", err)
	}
	if err := release2(); err != nil {
		t.Fatal(err)
	}
}

// TestHelperHoldLock is run as a subprocess by TestLockSubprocess: it takes
// the lock, says so, and holds it until stdin closes.
func TestHelperHoldLock(t *testing.T) {
	dir := os.Getenv("WEAVE_TEST_HOLD_LOCK")
	if dir == "" {
		t.Skip("helper process only")
	}
	release, err := NewStore(dir).Lock()
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_ = release()
	os.Exit(0)
}

func TestLockSubprocess(t *testing.T) {
	for _, how := range []string{"release", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			s := newStore(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$")
			cmd.Env = append(os.Environ(), "WEAVE_TEST_HOLD_LOCK="+filepath.Dir(s.Path()))
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || strings.TrimSpace(line) != "locked" {
				t.Fatalf("helper said %q, %v, want locked", line, err)
			}

			_, err = s.Lock()
			var le *LockedError
			if !errors.As(err, &le) || le.PID != cmd.Process.Pid {
				t.Fatalf("Lock while the helper holds it = %v, want a LockedError with pid %d", err, cmd.Process.Pid)
			}

			if how == "release" {
				_ = stdin.Close()
			} else {
				_ = cmd.Process.Kill()
			}
			_ = cmd.Wait()
			release, err := s.Lock()
			if err != nil {
				t.Fatalf("Lock after the helper exited (%s) = %v, want the lock", how, err)
			}
			_ = release()
		})
	}
}

func TestGitHead(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	if got := GitHead(t.TempDir()); got != "" {
		t.Errorf("GitHead(not a repo) = %q, want \"\"", got)
	}
	if got := GitHead(filepath.Join(t.TempDir(), "missing")); got != "" {
		t.Errorf("GitHead(missing dir) = %q, want \"\"", got)
	}
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		out, err := proc.GitOutput(context.Background(), repo, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	if got := GitHead(repo); got != "" {
		t.Errorf("GitHead(repo without commits) = %q, want \"\"", got)
	}
	git("commit", "-q", "--allow-empty", "-m", "first")
	ref := strings.TrimSpace(string(readFile(t, filepath.Join(repo, ".git", "refs", "heads", "main"))))
	got := GitHead(repo)
	if got != ref || !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(got) {
		t.Errorf("GitHead(repo) = %q, want %q", got, ref)
	}
	sub := filepath.Join(repo, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := GitHead(sub); got != ref {
		t.Errorf("GitHead(subdir) = %q, want %q", got, ref)
	}
}

func TestStoreSaveMinimal(t *testing.T) {
	s := newStore(t)
	if err := s.Save(&State{ActivePlan: "/p/x.md"}); err != nil {
		t.Fatalf("Save = %v", err)
	}
	raw := string(readFile(t, s.Path()))
	if !strings.Contains(raw, `"session_ids": []`) || strings.Contains(raw, "in_flight") || strings.Contains(raw, "start_sha") {
		t.Errorf("state.json = %s, want session_ids [] and no empty optional fields", raw)
	}
	if err := s.Save(nil); err == nil {
		t.Errorf("Save(nil) = nil, want an error")
	}
}

func TestLockRemovesCrashLeftovers(t *testing.T) {
	s := newStore(t)
	plansDir := filepath.Join(s.dir, "plans")
	if err := os.Mkdir(plansDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true command:", err)
	}
	// What a writer killed between its temp file and its rename leaves.
	left := []string{
		filepath.Join(s.dir, fmt.Sprintf(".state.json.tmp%d.123", dead.Process.Pid)),
		filepath.Join(plansDir, fmt.Sprintf(".auth.md.tmp%d.456", dead.Process.Pid)),
	}
	for _, p := range left {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	release, err := s.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("after Lock, %s is still there (stat: %v)", p, err)
		}
	}
}
