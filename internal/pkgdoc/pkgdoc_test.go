package pkgdoc

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weavehq/weave/internal/srcscan"
)

// TestEveryPackageHasADoc walks the module (skipping testdata, vendor and
// the directories the go tool ignores) and checks that each package has a
// doc comment in one of its non-test files, starting as godoc expects.
func TestEveryPackageHasADoc(t *testing.T) {
	root := srcscan.ModuleRoot(t)
	type pkg struct {
		name string
		doc  bool
	}
	pkgs := map[string]*pkg{} // by directory, relative to root
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir = filepath.ToSlash(dir)
		p := pkgs[dir]
		if p == nil {
			p = &pkg{name: f.Name.Name}
			pkgs[dir] = p
		}
		if f.Doc != nil && strings.HasPrefix(f.Doc.Text(), docPrefix(dir, p.name)) {
			p.doc = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must see the module, not an empty directory.
	for _, want := range []string{"bus", "bus/bustest", "plugins", "plugins/plugintest", "host", "cmd/weave", "internal/pkgdoc"} {
		if pkgs[want] == nil {
			t.Errorf("the walk from %s found no package in %s", root, want)
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(pkgs)) {
		if p := pkgs[dir]; !p.doc {
			t.Errorf("package %s in %s has no doc comment starting %q: add a doc.go that says what it is and what it guarantees", p.name, dir, docPrefix(dir, p.name))
		}
	}
}

// docPrefix is how the doc of the package name in dir starts: "Package
// name " for a library, "Command <directory> " for a command.
func docPrefix(dir, name string) string {
	if name == "main" {
		return "Command " + filepath.Base(dir) + " "
	}
	return "Package " + name + " "
}
