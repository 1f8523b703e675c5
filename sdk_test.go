package weave

import (
	"go/parser"
	"go/token"
	"path"
	"strconv"
	"strings"
	"testing"
)

// The embedded files hold every package of this module the plugin
// author's packages import, and no test.
func TestSDKIsClosed(t *testing.T) {
	dirs := map[string]bool{}
	imports := map[string]bool{}
	err := SDK(func(name string, body []byte) error {
		if strings.HasSuffix(name, "_test.go") {
			t.Errorf("%s: a test in the SDK", name)
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		dirs[path.Dir(name)] = true
		f, err := parser.ParseFile(token.NewFileSet(), name, body, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rel, ok := strings.CutPrefix(p, "github.com/weavehq/weave/"); ok {
				imports[rel] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"plugins", "plugins/plugintest"} {
		if !dirs[want] {
			t.Errorf("the SDK lacks %s", want)
		}
	}
	for imp := range imports {
		if !dirs[imp] {
			t.Errorf("the SDK imports %s but does not carry it", imp)
		}
	}
}
