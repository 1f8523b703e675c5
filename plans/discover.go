package plans

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// PlansDir is the directory holding a project's plans.
func PlansDir(project string) string {
	return filepath.Join(project, ".weave", "plans")
}

// Load reads and parses the plan at path and sets its Path (made absolute),
// Name and ModTime.
func Load(path string) (*Plan, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	p := Parse(src)
	setFile(p, path, fi)
	return p, nil
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
// (ties by name). Hidden files and subdirectories are skipped.
func Discover(project string) ([]*Plan, error) {
	files, err := planFiles(project)
	if err != nil {
		return nil, err
	}
	ps := make([]*Plan, 0, len(files))
	for _, f := range files {
		p, err := Load(f.path)
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
	info       fs.FileInfo
}

// planFiles lists the plan files of a project, newest modified first, ties
// by name, without reading them.
func planFiles(project string) ([]planFile, error) {
	dir := PlansDir(project)
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
		if !fi.Mode().IsRegular() {
			continue
		}
		files = append(files, planFile{path: path, name: planName(path), modTime: fi.ModTime(), info: fi})
	}
	sort.SliceStable(files, func(i, j int) bool {
		if !files[i].modTime.Equal(files[j].modTime) {
			return files[i].modTime.After(files[j].modTime)
		}
		return files[i].name < files[j].name
	})
	return files, nil
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
			return Load(f.path)
		}
	}
	if !exactOnly {
		for _, f := range files {
			if strings.Contains(strings.ToLower(f.name), want) {
				return Load(f.path)
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
