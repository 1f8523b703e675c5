package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command a person can see shows examples in its help, cobra's own
// help and completion commands included.
func TestEveryCommandHasExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the weave binary")
	}
	bin := buildWeave(t)
	root := newRootCmd(context.Background(), &Streams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden || strings.HasPrefix(c.Name(), "__") {
			return
		}
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(root, nil)
	if len(paths) < 30 {
		t.Fatalf("found %d commands; the walk missed some", len(paths))
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	dir := t.TempDir()
	for _, p := range paths {
		name := strings.Join(append([]string{"weave"}, p...), " ")
		code, out, errOut := runWeave(t, bin, dir, env, append(p, "--help")...)
		if code != 0 {
			t.Errorf("%s --help: exit %d: %s", name, code, errOut)
			continue
		}
		_, examples, ok := strings.Cut(out, "\nExamples:\n")
		if !ok {
			t.Errorf("%s --help has no Examples section", name)
			continue
		}
		first, _, _ := strings.Cut(examples, "\n")
		if !strings.Contains(first, "weave") && !strings.Contains(first, "source <(") {
			t.Errorf("%s --help: the first example %q does not show a weave command", name, first)
		}
	}
}
