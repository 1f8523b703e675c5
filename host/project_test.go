package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weavehq/weave/host/run/runtest"
)

func TestFindProjectWalksUp(t *testing.T) {
	project := runtest.NewProject(t, nil)
	deep := filepath.Join(project, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := FindProject(deep)
	if err != nil || got != project {
		t.Errorf("FindProject(%s) = %q, %v; want %q", deep, got, err, project)
	}
	if _, err := FindProject(t.TempDir()); !errors.Is(err, ErrNoProject) || !strings.Contains(err.Error(), "weave init") {
		t.Errorf("FindProject(no .weave) = %v, want ErrNoProject telling to run weave init", err)
	}
}
