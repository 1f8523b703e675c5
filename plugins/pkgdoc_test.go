package plugins

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs checks that this package and its public subpackages say
// what they are.
func TestPackageDocs(t *testing.T) {
	for _, dir := range []string{".", "plugintest"} {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", dir, err)
		}
		for name, pkg := range pkgs {
			documented := false
			for _, f := range pkg.Files {
				if f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Package "+name+" ") {
					documented = true
				}
			}
			if !documented {
				t.Errorf("package %s in %s has no doc comment starting %q", name, filepath.Clean(dir), "Package "+name+" ")
			}
		}
	}
}
