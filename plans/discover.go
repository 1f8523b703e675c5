package plans

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/safefile"
)

// PlansDir is the directory holding a project's plans.
func PlansDir(project string) string {
	return layout.NewProject(project).Plans()
}

// Load reads and parses the plan at path and sets its Path (made absolute),
// Name and ModTime. A file past MaxPlanSize is not read: the plan comes back
// with Invalid saying so. Anything but a regular file is an error.
func Load(path string) (*Plan, error) { return LoadContext(context.Background(), path) }

// LoadContext is Load that gives up once ctx is done (see ParseContext).
func LoadContext(ctx context.Context, path string) (*Plan, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	var p *Plan
	src, err := readPlan(f, path)
	var tl *safefile.TooLargeError
	switch {
	case errors.As(err, &tl):
		p = &Plan{Invalid: tooLarge()}
	case err != nil:
		return nil, err
	default:
		if p, err = ParseContext(ctx, src); err != nil {
			return nil, fmt.Errorf("read plan %s: %w", path, err)
		}
	}
	setFile(p, path, fi)
	return p, nil
}

// readPlan reads a plan file, at most MaxPlanSize bytes of it.
func readPlan(f *os.File, path string) ([]byte, error) {
	src, err := safefile.ReadAll(f, path, MaxPlanSize)
	var tl *safefile.TooLargeError
	if err != nil && !errors.As(err, &tl) {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	return src, err
}

// readPlanFile reads the plan file at path, at most MaxPlanSize bytes, as
// ticking and reloading do; a file past the bound is an error there.
func readPlanFile(path string) ([]byte, error) {
	src, err := safefile.ReadFile(path, MaxPlanSize)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return src, nil
}

func setFile(p *Plan, path string, fi fs.FileInfo) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	p.Path = path
	p.Name = planName(path)
	if fi != nil {
		p.ModTime = fi.ModTime()
		p.file = keyOf(fi)
	}
}

func planName(path string) string {
	base := filepath.Base(path)
	if ext := filepath.Ext(base); strings.EqualFold(ext, ".md") {
		base = base[:len(base)-len(ext)]
	}
	return base
}

func isPlanFile(name string) bool {
	return strings.EqualFold(filepath.Ext(name), ".md") && len(name) > len(".md") && !strings.HasPrefix(name, ".")
}

// Discover loads every plan in .weave/plans/*.md, newest modified first
// (ties by name). Hidden files and subdirectories are skipped. A plan past
// the bounds is listed with Invalid set.
func Discover(project string) ([]*Plan, error) {
	return DiscoverContext(context.Background(), project)
}

// DiscoverContext is Discover that stops when ctx is done: each plan's
// parse is bounded, and ctx is checked before each one.
func DiscoverContext(ctx context.Context, project string) ([]*Plan, error) {
	files, err := planFiles(project)
	if err != nil {
		return nil, err
	}
	ps := make([]*Plan, 0, len(files))
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if f.invalid != "" {
			p := &Plan{Invalid: f.invalid}
			setFile(p, f.path, nil)
			p.ModTime = f.modTime
			ps = append(ps, p)
			continue
		}
		p, err := LoadContext(ctx, f.path)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// planFile is a plan file as its directory lists it, before it is read.
type planFile struct {
	path, name string
	modTime    time.Time
	invalid    string // why it is not read, for what is not a regular file
	info       fs.FileInfo
}

// planFiles lists the plan files of a project, newest modified first, ties
// by name, without reading them.
func planFiles(project string) ([]planFile, error) {
	dir := PlansDir(project)
	if err := checkPlansDir(dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no plans directory %s: run `weave init` in the project first", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("list plans in %s: %w", dir, err)
	}
	var files []planFile
	for _, e := range entries {
		if !isPlanFile(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("read plan %s: %w", path, err)
		}
		if fi.IsDir() {
			continue
		}
		pf := planFile{path: path, name: planName(path), modTime: fi.ModTime(), info: fi}
		if !fi.Mode().IsRegular() {
			// Never opened: a named pipe would block, a device never ends.
			pf.invalid = fmt.Sprintf("the plan file is %s, not a regular file; replace it with a plain file", safefile.Kind(fi.Mode()))
		}
		files = append(files, pf)
	}
	sort.SliceStable(files, func(i, j int) bool {
		if !files[i].modTime.Equal(files[j].modTime) {
			return files[i].modTime.After(files[j].modTime)
		}
		return files[i].name < files[j].name
	})
	return files, nil
}

// checkPlansDir refuses a plans directory that is a symbolic link, as a
// plan file that links outside .weave/plans is refused: plans are read, and
// ticked, only inside the project.
func checkPlansDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil // reading the directory reports it
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		return fmt.Errorf("plans directory %s is a symbolic link (to %s); weave reads plans only from a real directory in the project: replace the link with a directory holding the plans", dir, target)
	}
	if !fi.IsDir() {
		return fmt.Errorf("plans directory %s is not a directory; move it away and run `weave init`", dir)
	}
	return nil
}

// NotFoundError says that no plan matched a name.
type NotFoundError struct {
	Name string
	Have []string // names of the plans there are, newest first
}

func (e *NotFoundError) Error() string {
	if len(e.Have) == 0 {
		return fmt.Sprintf("no plan named %q: .weave/plans has no plans yet; write one there (or ask Pattern for one)", e.Name)
	}
	return fmt.Sprintf("no plan named %q in .weave/plans (have: %s)", e.Name, strings.Join(e.Have, ", "))
}

// Find looks a plan up by name: an exact case-insensitive match on the base
// name (with or without .md) first, else the newest plan whose name contains
// name case-insensitively. Complete plans are found too. A name with a path
// separator is taken as a path (relative to project) and must point into
// .weave/plans; anything else is an error. No match gives a *NotFoundError.
func Find(project, name string) (*Plan, error) {
	return FindContext(context.Background(), project, name)
}

// FindContext is Find that gives up once ctx is done (see ParseContext).
func FindContext(ctx context.Context, project, name string) (*Plan, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, errors.New("find plan: the name is empty; give a plan name (see `weave plan list`)")
	}
	exactOnly := false
	if strings.ContainsAny(name, `/\`) || name == ".." || name == "." {
		base, err := planInDir(project, name)
		if err != nil {
			return nil, err
		}
		name, exactOnly = base, true
	}
	want := strings.ToLower(planName(name))
	// Only the plan found is read: a lookup must not cost a parse of every plan.
	files, err := planFiles(project)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if strings.ToLower(f.name) == want {
			return LoadContext(ctx, f.path)
		}
	}
	if !exactOnly {
		for _, f := range files {
			if strings.Contains(strings.ToLower(f.name), want) {
				return LoadContext(ctx, f.path)
			}
		}
	}
	nf := &NotFoundError{Name: name}
	for _, f := range files {
		nf.Have = append(nf.Have, f.name)
	}
	return nil, nf
}

// planInDir resolves a path-like plan name against project and returns its
// base name when it lies directly in .weave/plans.
func planInDir(project, name string) (string, error) {
	dir, err := filepath.Abs(PlansDir(project))
	if err != nil {
		return "", fmt.Errorf("find plan %q: %w", name, err)
	}
	path := filepath.FromSlash(name)
	if !filepath.IsAbs(path) {
		path = filepath.Join(project, path)
	}
	path, err = filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("find plan %q: %w", name, err)
	}
	if filepath.Dir(path) != dir {
		return "", fmt.Errorf("plan %q is outside %s: plans must live directly in .weave/plans; move it there and use its name", name, dir)
	}
	return filepath.Base(path), nil
}
