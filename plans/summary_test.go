package plans

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// summaryProject is a project whose plans are files, their modification
// times set to long ago so that the progress cache may keep them.
func summaryProject(t testing.TB, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	plansDir := PlansDir(dir)
	if err := os.MkdirAll(plansDir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	i := 0
	for name, src := range files {
		path := filepath.Join(plansDir, name)
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		// Distinct times keep Discover's order independent of names.
		if err := os.Chtimes(path, old, old.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		i++
	}
	return dir
}

// fullSummaries is what listings showed before the cache: a full parse of
// every plan.
func fullSummaries(t testing.TB, project string) []Summary {
	t.Helper()
	all, err := Discover(project)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]Summary, 0, len(all))
	for _, p := range all {
		out = append(out, Summary{Name: p.Name, Path: p.Path, ModTime: p.ModTime, Progress: p.Progress()})
	}
	return out
}

// checkSummaries compares Summaries with the full parse, cold and then from
// the cache.
func checkSummaries(t testing.TB, project string) {
	t.Helper()
	want := fullSummaries(t, project)
	for _, run := range []string{"cold", "cached"} {
		got, err := Summaries(context.Background(), project)
		if err != nil {
			t.Fatalf("Summaries (%s) = %v", run, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Summaries (%s) differs from the full parse (-full +summaries):\n%s", run, diff)
		}
	}
}

func TestSummariesMatchTheParser(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string][]byte{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		plans[filepath.Base(f)] = src
	}
	project := summaryProject(t, plans)
	checkSummaries(t, project)
	b, err := os.ReadFile(filepath.Join(CacheDir(project), progressCacheFile))
	if err != nil {
		t.Fatalf("no progress cache after a listing: %v", err)
	}
	for name := range plans {
		if !strings.Contains(string(b), name) {
			t.Errorf("the progress cache does not hold %s:\n%s", name, b)
		}
	}
}

// The cache answers only for the file it saw: a tick (same size, written by
// rename), an edit that keeps size and modification time, a new, a removed
// and a recently written plan are all read again.
func TestSummariesSeeChanges(t *testing.T) {
	const plan = "# P\n\n## TODOs\n\n- [ ] 1. A\n- [ ] 2. B\n"
	project := summaryProject(t, map[string][]byte{"a.md": []byte(plan), "b.md": []byte(plan)})
	checkSummaries(t, project)
	a := filepath.Join(PlansDir(project), "a.md")
	fi, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"tick by rename, time kept", func() error {
			tmp := a + ".new"
			if err := os.WriteFile(tmp, []byte(strings.Replace(plan, "[ ]", "[x]", 1)), 0o644); err != nil {
				return err
			}
			if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
				return err
			}
			return os.Rename(tmp, a)
		}},
		{"edit in place, size and time kept", func() error {
			if err := os.WriteFile(a, []byte(strings.ReplaceAll(plan, "[ ]", "[x]")), 0o644); err != nil {
				return err
			}
			return os.Chtimes(a, fi.ModTime(), fi.ModTime())
		}},
		{"new plan, just written", func() error {
			return os.WriteFile(filepath.Join(PlansDir(project), "c.md"), []byte(plan+"- [x] 3. C\n"), 0o644)
		}},
		{"recent plan edited again", func() error {
			return os.WriteFile(filepath.Join(PlansDir(project), "c.md"), []byte(plan+"- [ ] 3. C\n"), 0o644)
		}},
		{"plan removed", func() error { return os.Remove(filepath.Join(PlansDir(project), "b.md")) }},
		{"cache deleted", func() error { return os.RemoveAll(CacheDir(project)) }},
		{"cache garbled", func() error {
			return os.WriteFile(filepath.Join(CacheDir(project), progressCacheFile), []byte(`{"version":1,"plans":{"a.md":`), 0o644)
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		t.Run(s.name, func(t *testing.T) { checkSummaries(t, project) })
	}
}

func FuzzSummaries(f *testing.F) {
	addSeeds(f, func(src []byte) { f.Add(src) })
	f.Fuzz(func(t *testing.T, src []byte) {
		project := summaryProject(t, map[string][]byte{"p.md": src})
		checkSummaries(t, project)
	})
}
