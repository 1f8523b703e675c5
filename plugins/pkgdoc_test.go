package plugins

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// parsePackage parses the non-test Go files of the package in dir that build
// on this platform, as go/build lists them.
func parsePackage(t *testing.T, dir string, mode parser.Mode) (string, []*ast.File) {
	t.Helper()
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("list package in %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, mode|parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", filepath.Join(dir, name), err)
		}
		files = append(files, f)
	}
	return bp.Name, files
}

// TestPackageDocs checks that this package and its public subpackages say
// what they are.
func TestPackageDocs(t *testing.T) {
	for _, dir := range []string{".", "plugintest", "pluginhost"} {
		name, files := parsePackage(t, dir, parser.ParseComments|parser.PackageClauseOnly)
		documented := false
		for _, f := range files {
			if f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Package "+name+" ") {
				documented = true
			}
		}
		if !documented {
			t.Errorf("package %s in %s has no doc comment starting %q", name, filepath.Clean(dir), "Package "+name+" ")
		}
	}
}
