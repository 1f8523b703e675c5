// Package weave carries the source of the plugin author's packages
// (plugins, plugins/plugintest and what they import from this module) with
// the module's go.mod, go.sum and license, embedded so that `weave plugin
// new` writes a module a new plugin builds and tests against from an
// installed binary alone: no clone of this repository, and the same
// protocol as the binary that wrote it.
package weave

import (
	"embed"
	"io/fs"
	"path"
	"strings"
)

//go:embed go.mod go.sum LICENSE plugins/*.go plugins/internal plugins/pluginhost/*.go plugins/plugintest/*.go
var sdk embed.FS

// SDK calls fn for each file of the plugin author's module, by its path
// from the module root, tests left out.
func SDK(fn func(name string, body []byte) error) error {
	return fs.WalkDir(sdk, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path.Base(p), "_test.go") {
			return err
		}
		b, err := sdk.ReadFile(p)
		if err != nil {
			return err
		}
		return fn(p, b)
	})
}

// GoVersion is the go directive of the module's go.mod.
func GoVersion() string {
	b, err := sdk.ReadFile("go.mod")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
