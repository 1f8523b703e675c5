package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Set by a release build (scripts/release.sh) with -ldflags -X; a plain
// `go build` or `go install` leaves them empty and the build info fills in.
var (
	version string
	commit  string
	date    string
)

// buildInfo says which weave this is.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	// Modified is set when the binary was built from a tree with
	// uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Date is the build date of a release build, else the commit's date.
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// readBuildInfo reads what the linker and the Go toolchain recorded.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if b.Commit == "" {
					b.Commit = s.Value
				}
			case "vcs.time":
				if b.Date == "" {
					b.Date = s.Value
				}
			case "vcs.modified":
				b.Modified = b.Modified || (s.Value == "true" && commit == "")
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	// A pseudo-version already carries "+dirty"; say it once.
	b.Version = strings.TrimSuffix(b.Version, "+dirty")
	return b
}

func (b buildInfo) write(w io.Writer) {
	fmt.Fprintf(w, "weave %s\n", b.Version)
	if b.Commit != "" {
		mod := ""
		if b.Modified {
			mod = " (modified)"
		}
		fmt.Fprintf(w, "commit: %s%s\n", b.Commit, mod)
	}
	if b.Date != "" {
		fmt.Fprintf(w, "date:   %s\n", b.Date)
	}
	fmt.Fprintf(w, "go:     %s %s\n", b.GoVersion, b.Platform)
}

func newCmdVersion(s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print weave's version, commit, build date and Go version",
		Example: `  weave version
  weave version --json | jq -r .commit
  weave --version`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			b := readBuildInfo()
			if asJSON {
				return writeJSON(s.Out, b)
			}
			b.write(s.Out)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the build information as JSON")
	return cmd
}

// versionTemplate is what `weave --version` prints: the same as `weave
// version`.
func versionTemplate() string {
	var b strings.Builder
	readBuildInfo().write(&b)
	// cobra runs this through text/template.
	return strings.ReplaceAll(b.String(), "{{", "{{`{{`}}")
}

// writeJSON prints v as indented JSON, the form every --json takes.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
