package plans

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// newProject makes a project with .weave/plans holding the given plans; the
// first is the newest.
func newProject(t testing.TB, plans map[string]string, order ...string) string {
	t.Helper()
	project := t.TempDir()
	dir := PlansDir(project)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour)
	for i, name := range order {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(plans[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(-time.Duration(i) * time.Minute)
		if err := os.Chtimes(path, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	return project
}

func TestDiscover(t *testing.T) {
	project := newProject(t, map[string]string{
		"dark-mode.md":    "- [ ] a\n",
		"oauth2-login.md": "- [x] a\n",
		"Upper.MD":        "- [ ] a\n",
		"notes.txt":       "not a plan",
		".hidden.md":      "- [ ] hidden\n",
	}, "dark-mode.md", "oauth2-login.md", "Upper.MD", "notes.txt", ".hidden.md")
	if err := os.Mkdir(filepath.Join(PlansDir(project), "sub.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	ps, err := Discover(project)
	if err != nil {
		t.Fatalf("Discover = %v", err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		if !filepath.IsAbs(p.Path) || p.ModTime.IsZero() || len(p.Tasks) != 1 {
			t.Errorf("plan %s: Path %q, ModTime %v, %d tasks", p.Name, p.Path, p.ModTime, len(p.Tasks))
		}
	}
	if diff := cmp.Diff([]string{"dark-mode", "oauth2-login", "Upper"}, names); diff != "" {
		t.Errorf("Discover names (-want +got):\n%s", diff)
	}
}

func TestDiscoverMissingDir(t *testing.T) {
	_, err := Discover(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "weave init") {
		t.Errorf("Discover(no .weave) = %v, want an error saying to run weave init", err)
	}
}

func TestFind(t *testing.T) {
	project := newProject(t, map[string]string{
		"oauth2-login.md": "- [ ] a\n",
		"auth-cleanup.md": "- [x] done\n",
		"Dark-Mode.md":    "- [ ] a\n",
		"auth.md":         "- [x] a\n",
	}, "oauth2-login.md", "auth-cleanup.md", "Dark-Mode.md", "auth.md")
	have := []string{"oauth2-login", "auth-cleanup", "Dark-Mode", "auth"}
	tests := []struct {
		name     string
		want     string // plan name; "" for an error
		notFound bool
		errHas   string
	}{
		{name: "auth", want: "auth"}, // exact beats a newer substring match
		{name: "AUTH.md", want: "auth"},
		{name: "dark-mode", want: "Dark-Mode"},
		{name: "login", want: "oauth2-login"},
		{name: "clean", want: "auth-cleanup"}, // complete plans are found too
		{name: "o", want: "oauth2-login"},     // newest of several substring matches
		{name: ".weave/plans/auth.md", want: "auth"},
		{name: filepath.Join(PlansDir(project), "Dark-Mode.md"), want: "Dark-Mode"},
		{name: "nope", notFound: true, errHas: "oauth2-login, auth-cleanup"},
		{name: ".weave/plans/login", notFound: true}, // a path is matched exactly
		{name: "../auth", errHas: "outside"},
		{name: "../../etc/passwd", errHas: "outside"},
		{name: ".weave/plans/../../auth.md", errHas: "outside"},
		{name: "..", errHas: "outside"},
		{name: "/etc/passwd", errHas: "outside"},
		{name: "  ", errHas: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Find(project, tt.name)
			if tt.want != "" {
				if err != nil || p.Name != tt.want {
					t.Fatalf("Find(%q) = %v, %v, want plan %q", tt.name, p, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Find(%q) = plan %q, want an error", tt.name, p.Name)
			}
			var nf *NotFoundError
			if errors.As(err, &nf) != tt.notFound {
				t.Errorf("Find(%q) error %v: NotFoundError %v, want %v", tt.name, err, !tt.notFound, tt.notFound)
			}
			if tt.notFound {
				if diff := cmp.Diff(have, nf.Have); diff != "" {
					t.Errorf("NotFoundError.Have (-want +got):\n%s", diff)
				}
			}
			if !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("Find(%q) = %q, want it to contain %q", tt.name, err, tt.errHas)
			}
		})
	}
}

func TestFindEmptyDir(t *testing.T) {
	project := newProject(t, nil)
	_, err := Find(project, "x")
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.Have) != 0 || !strings.Contains(err.Error(), "no plans yet") {
		t.Errorf("Find in an empty plans dir = %v, want a NotFoundError saying there are no plans", err)
	}
}

func TestLoad(t *testing.T) {
	path := writeTemp(t, "my-plan.md", readTestdata(t, "pattern.md"))
	p, err := Load(path)
	if err != nil {
		t.Fatalf("Load = %v", err)
	}
	if p.Name != "my-plan" || p.Path != path || p.ModTime.IsZero() || len(p.Tasks) != 5 {
		t.Errorf("Load = Name %q Path %q ModTime %v tasks %d", p.Name, p.Path, p.ModTime, len(p.Tasks))
	}
	if _, err := Load(filepath.Join(t.TempDir(), "gone.md")); err == nil || !strings.Contains(err.Error(), "gone.md") {
		t.Errorf("Load(missing) = %v, want an error naming the file", err)
	}
}
