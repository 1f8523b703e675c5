package main

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"text/template"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave"
)

// The scaffold templates are named *.tmpl so that Go never reads them as
// part of this module (a go.mod there would even cut the directory out).
//
//go:embed templates/plugin
var pluginTemplates embed.FS

// weaveModule is the module path a plugin requires.
const weaveModule = "github.com/weavehq/weave"

// weaveSrcEnv names the weave source tree for `weave plugin new`.
const weaveSrcEnv = "WEAVE_SRC"

func newCmdPlugin(g *globalOptions, s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "plugin",
		Short:   "Write your own plugins",
		Example: `  weave plugin new hook no-force-push`,
	}
	newCmd := &cobra.Command{
		Use:     "new",
		Short:   "Scaffold a new plugin",
		Example: `  weave plugin new hook no-force-push`,
	}
	newCmd.AddCommand(newCmdPluginNewHook(s, nil))
	cmd.AddCommand(newCmd)
	return cmd
}

// pluginNewOptions are the inputs of `weave plugin new hook`.
type pluginNewOptions struct {
	Streams *Streams
	Name    string
	// Dir is the directory to create; empty means ./Name.
	Dir string
	// Module is the module path; empty means example.com/Name.
	Module string
	// WeaveSrc is the weave source tree for go.mod's replace; empty means
	// $WEAVE_SRC, else found upward from the executable or working dir.
	WeaveSrc string
	// SkipTidy leaves out `go mod tidy`.
	SkipTidy bool
	// Environ is the environment (os.Environ() form) read for WEAVE_SRC and
	// given to go; nil means the process's.
	Environ []string
}

func newCmdPluginNewHook(s *Streams, runF func(context.Context, *pluginNewOptions) error) *cobra.Command {
	opts := &pluginNewOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "hook NAME",
		Short: "Scaffold a Go module for a hook plugin that builds and whose test passes",
		Long: `Create a Go module for a hook plugin named NAME in ./NAME (or --dir): go.mod,
main.go (a hook that blocks rm -rf /-style bash commands on
tool.execute.before), main_test.go (a test through plugintest) and a README
with the build and install steps. An existing non-empty directory is never
touched.

The module requires ` + weaveModule + `, which is not on a module proxy, so
go.mod replaces it with a source tree: --weave-src, else $` + weaveSrcEnv + `,
else the first directory upward from the weave executable or the working
directory whose go.mod is that module. When none is found (an installed
binary), the module's plugin packages are written from this binary into
NAME/` + sdkDir + `/ and go.mod replaces it with that. Then, when go is on PATH,
` + "`go mod tidy`" + ` runs in the new module (--skip-tidy leaves it out). The module
is written beside NAME and moved there only when whole: a failure leaves
nothing.`,
		Example: `  weave plugin new hook no-force-push
  weave plugin new hook guard --out ~/src/guard --module github.com/me/guard --weave-src ~/src/weave`,
		Args: argsBetween(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return pluginNewHookRun(c.Context(), opts)
		},
	}
	// --out, not --dir: the global --dir names a project, which this
	// command does not need.
	cmd.Flags().StringVar(&opts.Dir, "out", "", "directory to create the module in (default ./NAME)")
	cmd.Flags().StringVar(&opts.Module, "module", "", "module path (default example.com/NAME)")
	cmd.Flags().StringVar(&opts.WeaveSrc, "weave-src", "", "weave source tree for go.mod's replace (default $"+weaveSrcEnv+", else found upward)")
	cmd.Flags().BoolVar(&opts.SkipTidy, "skip-tidy", false, "do not run go mod tidy in the new module")
	return cmd
}

// pluginNamePattern keeps a plugin name usable as a file name, a Go string,
// a YAML scalar and a module path element.
var pluginNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// modulePathPattern is a loose check of a module path; `go mod tidy` has the
// last word.
var modulePathPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~/-]*$`)

// goReleasePattern matches a Go release such as 1.26 or 1.26.8, not a
// development build.
var goReleasePattern = regexp.MustCompile(`^\d+\.\d+(\.\d+)?$`)

// scaffoldData fills the templates.
type scaffoldData struct {
	Name, Module, GoVersion string
	// WeaveSrc is the weave source tree, absolute; empty when unknown.
	WeaveSrc       string
	WeaveSrcQuoted string
}

func pluginNewHookRun(ctx context.Context, o *pluginNewOptions) error {
	if !pluginNamePattern.MatchString(o.Name) {
		return usageErrorf("plugin name %q: use letters, digits, '.', '-' and '_', starting with a letter or digit (at most 64)", o.Name)
	}
	module := o.Module
	if module == "" {
		module = "example.com/" + o.Name
	}
	if !modulePathPattern.MatchString(module) || strings.Contains(module, "//") || strings.HasSuffix(module, "/") || path.Clean(module) != module {
		return usageErrorf("--module %q is not a module path (like github.com/you/%s)", module, o.Name)
	}
	environ := o.Environ
	if environ == nil {
		environ = os.Environ()
	}
	dir := o.Dir
	if dir == "" {
		dir = o.Name
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("plugin directory %s: %w", o.Dir, err)
	}
	if err := checkEmptyDir(dir); err != nil {
		return err
	}
	src, err := findWeaveSrc(o.WeaveSrc, envValue(environ, weaveSrcEnv))
	if err != nil {
		return err
	}
	data := scaffoldData{Name: o.Name, Module: module, GoVersion: goVersion(src), WeaveSrc: src, WeaveSrcQuoted: quoteModPath(src)}
	files, err := renderScaffold("templates/plugin/hook", data)
	if err != nil {
		return err
	}
	if src == "" {
		// No source tree here (an installed binary): the module's packages
		// a plugin needs are written beside it from this binary.
		data.WeaveSrc, data.WeaveSrcQuoted = "./"+sdkDir, "./"+sdkDir
		if files, err = renderScaffold("templates/plugin/hook", data); err != nil {
			return err
		}
		err = weave.SDK(func(name string, body []byte) error {
			files = append(files, scaffoldFile{name: sdkDir + "/" + name, body: body})
			return nil
		})
		if err != nil {
			return fmt.Errorf("the embedded weave module: %w", err)
		}
	}
	// The module is built in a directory beside dir and moved into place
	// only once whole (tidied too), so a failure leaves nothing behind.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create plugin directory: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".new-")
	if err != nil {
		return fmt.Errorf("create plugin directory: %w", err)
	}
	placed := false
	defer func() {
		if !placed {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("create plugin directory: %w", err)
	}
	if err := writeScaffold(tmp, files); err != nil {
		return err
	}
	tidied := false
	if !o.SkipTidy {
		ran, err := goModTidy(ctx, tmp, environ)
		if err != nil {
			return fmt.Errorf("`go mod tidy` failed in the new module, so nothing was written to %s: %w\n"+
				"fix what it says (offline? GOFLAGS=-mod=mod GOPROXY=off uses the module cache) and run this again, or add --skip-tidy", dir, err)
		}
		tidied = ran
	}
	if err := placeDir(tmp, dir); err != nil {
		return err
	}
	placed = true
	out := o.Streams.Out
	fmt.Fprintf(out, "created hook plugin %s in %s (module %s)\n", o.Name, dir, module)
	for _, f := range files {
		if !strings.HasPrefix(f.name, sdkDir+"/") {
			fmt.Fprintf(out, "  %s\n", f.name)
		}
	}
	if src == "" {
		fmt.Fprintf(out, "  %s/ (the weave module's plugin packages, from this weave binary)\n", sdkDir)
	}
	if !o.SkipTidy && !tidied {
		fmt.Fprintf(out, "\ngo is not on PATH: run `go mod tidy` in %s before building.\n", dir)
	}
	fmt.Fprintf(out, "\nnext:\n  cd %s\n", dir)
	if !tidied {
		fmt.Fprintf(out, "  go mod tidy\n")
	}
	fmt.Fprintf(out, "  go test ./...\n  go build -o /path/to/project/.weave/plugins/%s .\n  weave plugins list   # in the project\n", o.Name)
	return nil
}

// sdkDir is where, in a new plugin's module, the weave module's plugin
// packages are written when no source tree is named or found.
const sdkDir = "weave-sdk"

// placeDir moves the finished module tmp to dir, which is absent or empty.
func placeDir(tmp, dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("plugin directory %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("plugin directory %s: %w", dir, err)
	}
	return nil
}

// checkEmptyDir refuses a dir that exists with anything in it.
func checkEmptyDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("plugin directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory: choose another --dir", dir)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("plugin directory: %w", err)
	}
	if len(des) > 0 {
		return fmt.Errorf("%s exists and is not empty: nothing was written; choose another --dir or name", dir)
	}
	return nil
}

func envValue(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val // the last one wins, as in the os package
		}
	}
	return v
}

// findWeaveSrc returns the weave source tree: flag, else env, else the first
// directory upward from the executable or the working directory whose go.mod
// declares the weave module; "" when none is found. A tree named by the flag
// or the environment that is not weave's is an error.
func findWeaveSrc(flag, env string) (string, error) {
	for _, given := range []struct{ dir, what string }{{flag, "--weave-src"}, {env, "$" + weaveSrcEnv}} {
		if given.dir == "" {
			continue
		}
		abs, err := filepath.Abs(given.dir)
		if err != nil {
			return "", fmt.Errorf("%s %s: %w", given.what, given.dir, err)
		}
		if !isWeaveSrc(abs) {
			return "", fmt.Errorf("%s %s: no go.mod of module %s there; name the root of a weave source tree", given.what, given.dir, weaveModule)
		}
		return abs, nil
	}
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, d := range starts {
		for {
			if isWeaveSrc(d) {
				return d, nil
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return "", nil
}

// isWeaveSrc reports whether dir holds the go.mod of the weave module.
func isWeaveSrc(dir string) bool {
	return goModDirective(filepath.Join(dir, "go.mod"), "module") == weaveModule
}

// goModDirective returns the argument of the first line of a go.mod that
// starts with directive ("module", "go"), or "".
func goModDirective(gomod, directive string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == directive {
			if v, err := strconv.Unquote(fields[1]); err == nil {
				return v
			}
			return fields[1]
		}
	}
	return ""
}

// goVersion is the go directive for the new module: weave's own, so that
// the plugin builds with what weave needs, else this binary's Go release.
func goVersion(src string) string {
	if src != "" {
		if v := goModDirective(filepath.Join(src, "go.mod"), "go"); v != "" {
			return v
		}
	} else if v := weave.GoVersion(); v != "" {
		return v
	}
	v := strings.TrimPrefix(runtime.Version(), "go")
	if !goReleasePattern.MatchString(v) {
		return "1.26"
	}
	return v
}

// quoteModPath quotes a path for go.mod when it needs it.
func quoteModPath(p string) string {
	if p == "" || strings.ContainsAny(p, " \t\"'`\\") {
		return strconv.Quote(p)
	}
	return p
}

type scaffoldFile struct {
	name string
	body []byte
}

// renderScaffold renders every template under root, dropping the .tmpl
// suffix. It writes nothing, so a broken template leaves no half module.
func renderScaffold(root string, data scaffoldData) ([]scaffoldFile, error) {
	var files []scaffoldFile
	err := fs.WalkDir(pluginTemplates, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := pluginTemplates.ReadFile(p)
		if err != nil {
			return err
		}
		t, err := template.New(p).Option("missingkey=error").Parse(string(b))
		if err != nil {
			return fmt.Errorf("scaffold template %s: %w", p, err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return fmt.Errorf("scaffold template %s: %w", p, err)
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".tmpl")
		files = append(files, scaffoldFile{name: rel, body: buf.Bytes()})
		return nil
	})
	return files, err
}

// writeScaffold creates dir and the files in it, never replacing a file.
func writeScaffold(dir string, files []scaffoldFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create plugin directory: %w", err)
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("create plugin directory: %w", err)
		}
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		_, err = w.Write(f.body)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// goModTidy runs `go mod tidy` in dir when go is on PATH, and reports
// whether it ran. Its output becomes the error when it fails.
func goModTidy(ctx context.Context, dir string, environ []string) (bool, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return false, nil
	}
	cmd := exec.CommandContext(ctx, goBin, "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = environ
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &out
	if err := cmd.Run(); err != nil {
		return true, fmt.Errorf("%w\n%s", err, strings.TrimSpace(out.String()))
	}
	return true, nil
}
