package config

import (
	"io"
	"testing"
)

func BenchmarkLoad(b *testing.B) {
	root := b.TempDir()
	e := env{user: root + "/user", project: root + "/proj"}
	for _, d := range []string{e.user, e.project + "/.weave"} {
		if err := mkdir(d); err != nil {
			b.Fatal(err)
		}
	}
	if err := writeFile(e.userFile("config.json"), claudeSettings); err != nil {
		b.Fatal(err)
	}
	if err := writeFile(e.projectFile("config.yaml"), fullYAML); err != nil {
		b.Fatal(err)
	}
	opts := e.opts()
	opts.Environ = []string{"WEAVE_LOG_LEVEL=warn", "PATH=/usr/bin"}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Load(opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderWithSources(b *testing.B) {
	c := Default()
	s := &Sources{byKey: map[string]Source{}}
	b.ReportAllocs()
	for b.Loop() {
		if err := Render(io.Discard, c, s, true); err != nil {
			b.Fatal(err)
		}
	}
}
