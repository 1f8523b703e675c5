package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/weavehq/weave/plugins"
	"github.com/weavehq/weave/plugins/pluginhost"
)

// Dir is a directory of plugin executables and the source its plugins are
// listed under ("project", "user").
type Dir struct {
	Path   string
	Source string
}

// Discover lists the executables in dirs, named after their file names; a
// plugin found in an earlier directory wins over one of the same name in a
// later one. Hidden files and files that are not executable are skipped; a
// missing directory is empty. Where the directories are is the host's to say
// (see internal/layout).
func Discover(dirs ...Dir) ([]Entry, error) {
	var out []Entry
	seen := map[string]bool{}
	for _, d := range dirs {
		found, err := executablesIn(d.Path)
		if err != nil {
			return nil, err
		}
		for _, path := range found {
			name := strings.TrimSuffix(filepath.Base(path), ".exe")
			if seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, Entry{Name: name, Path: path, Source: d.Source})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func executablesIn(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list plugins in %s: %w", dir, err)
	}
	var out []string
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, de.Name())
		fi, err := os.Stat(path) // follows symlinks
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("list plugins in %s: %w", dir, err)
		}
		out = append(out, abs)
	}
	return out, nil
}

// Merge returns discovered with configured added; a configured
// entry replaces a discovered one of the same name.
func Merge(discovered, configured []Entry) []Entry {
	out := slices.DeleteFunc(slices.Clone(discovered), func(d Entry) bool {
		return slices.ContainsFunc(configured, func(c Entry) bool { return c.Name == d.Name })
	})
	out = append(out, configured...)
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// BuiltinEntry is the entry for the built-in plugin id: this executable,
// re-executed with the hidden pluginhost.BuiltinCommand subcommand.
func BuiltinEntry(id string) (Entry, error) {
	exe, err := os.Executable()
	if err != nil {
		return Entry{}, fmt.Errorf("built-in plugin %q: find the weave executable: %w", id, err)
	}
	return Entry{Name: id, Path: exe, Args: []string{pluginhost.BuiltinCommand, id}, Source: "builtin"}, nil
}

// describeTimeout bounds `PLUGIN describe`.
const describeTimeout = 10 * time.Second

// Describe runs the entry's executable with the argument "describe"
// (no handshake, the same explicit environment as a real start) and returns
// its manifest; it is what `weave plugins list` shows.
func Describe(ctx context.Context, e Entry, environ []string) (plugins.Manifest, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Path, append(slices.Clone(e.Args), "describe")...)
	cmd.Env = pluginEnv(environ, e)
	cmd.Dir = e.Dir
	cmd.SysProcAttr = pluginSysProcAttr()
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limitedBuffer{&stdout, 1 << 20}, &limitedBuffer{&stderr, 64 << 10}
	if err := cmd.Run(); err != nil {
		return plugins.Manifest{}, fmt.Errorf("plugin %q (%s): describe: %w: %s", e.Name, e.Path, err, strings.TrimSpace(stderr.String()))
	}
	var m plugins.Manifest
	if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
		return plugins.Manifest{}, fmt.Errorf("plugin %q (%s): describe printed no JSON manifest (is it a weave plugin?): %w", e.Name, e.Path, err)
	}
	return m, nil
}

// limitedBuffer keeps the first n bytes written and drops the rest.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
