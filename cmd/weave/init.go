package main

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/trust"
)

//go:embed templates/hello-weave.md
var samplePlan []byte

// weaveIgnore keeps the machine-local files of .weave/ out of version
// control; plans and config are meant to be shared.
const weaveIgnore = `# Machine-local Weave files.
state.json
state.json.*
weave.lock
logs/
run/
cache/
sessions/
# What the sample plan writes.
scratch/
`

type initOptions struct {
	*globalOptions
	Streams *Streams
}

func newCmdInit(g *globalOptions, s *Streams, runF func(context.Context, *initOptions) error) *cobra.Command {
	opts := &initOptions{globalOptions: g, Streams: s}
	return &cobra.Command{
		Example: `  weave init
  weave init --dir ~/src/my-project
  weave init && weave config show --sources`,
		Use:   "init",
		Short: "Create .weave/ with a config, a sample plan and ignore entries",
		Long: `Create .weave/ in the project directory (--dir, default: the working
directory): .weave/plans/ with a sample runbook plan, a .weave/config.yaml listing every
setting with its default as comments (so it overrides nothing until you
uncomment a line), and a .gitignore for the work state, logs and what the
sample plan writes. Existing files are left as they are.`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return initRun(opts)
		},
	}
}

func initRun(opts *initOptions) error {
	dir := opts.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("find working directory: %w", err)
		}
		dir = wd
	} else if err := opts.checkDir(); err != nil {
		return fmt.Errorf("%w; create it first, or run init inside the project", err)
	}
	l := layout.NewProject(dir)
	weaveDir := l.Dir()
	if fi, err := os.Stat(weaveDir); err == nil && fi.IsDir() {
		fmt.Fprintf(opts.Streams.Out, "%s is already a weave project; adding only what is missing\n", dir)
	} else if above, err := host.FindProject(filepath.Dir(dir)); err == nil {
		fmt.Fprintf(opts.Streams.Out, "note: %s is inside the weave project %s; creating a separate project here\n", dir, above)
	}
	if err := os.MkdirAll(l.Plans(), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", l.Plans(), err)
	}
	files := []struct {
		path string
		data []byte
	}{
		{l.Config(), config.DefaultYAML()},
		{l.Ignore(), []byte(weaveIgnore)},
		{l.Plan("hello-weave"), samplePlan},
	}
	for _, f := range files {
		rel := relPath(dir, f.path)
		err := writeNew(f.path, f.data)
		switch {
		case errors.Is(err, fs.ErrExist):
			fmt.Fprintf(opts.Streams.Out, "kept    %s (exists)\n", rel)
		case err != nil:
			return err
		default:
			fmt.Fprintf(opts.Streams.Out, "created %s\n", rel)
			if f.path == l.Config() {
				// The person asked for this config: it is trusted as
				// written, and only it.
				if err := trustWritten(dir, f.data); err != nil {
					fmt.Fprintf(opts.Streams.ErrOut, "warning: %v; run `weave trust` before the first start\n", err)
				}
			}
		}
	}
	fmt.Fprintln(opts.Streams.Out, "next: weave start-work hello-weave")
	return nil
}

// writeNew writes a file that must not exist yet.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// trustWritten records the project config init wrote as trusted, if the
// file still holds exactly data.
func trustWritten(project string, data []byte) error {
	snap, err := trust.Take(project)
	if err != nil {
		return err
	}
	want := sha256.Sum256(data)
	for _, f := range snap.Files {
		if f.Rel == layout.DirName+"/config.yaml" && f.Digest == hex.EncodeToString(want[:]) {
			return trust.UserStore(nil).Save(snap, []string{f.Rel})
		}
	}
	return nil
}
