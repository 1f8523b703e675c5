package plans

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Problem is one finding of Validate. Line is 1-based, 0 when the finding is
// about the plan as a whole.
type Problem struct {
	Line int
	Msg  string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("line %d: %s", p.Line, p.Msg)
	}
	return p.Msg
}

// Report holds the findings of Validate. Errors block a start; warnings are
// shown.
type Report struct {
	Errors, Warnings []Problem
}

// OK reports whether there are no errors.
func (r Report) OK() bool { return len(r.Errors) == 0 }

func (r *Report) errorf(line int, format string, args ...any) {
	r.Errors = append(r.Errors, Problem{Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (r *Report) warnf(line int, format string, args ...any) {
	r.Warnings = append(r.Warnings, Problem{Line: line, Msg: fmt.Sprintf(format, args...)})
}

// efforts are the accepted values of **Estimated Effort**: the
// opencode-weave scale (Quick, Short, Medium, Large, XL) and the plain
// Small | Medium | Large that people and models write as often. Messages
// name the first list, the one the Pattern template uses.
var efforts = []string{"Quick", "Short", "Medium", "Large", "XL"}

// effortSynonyms are accepted as well, without being suggested.
var effortSynonyms = []string{"Small", "Trivial", "Tiny", "S", "M", "L", "XXL"}

// templateSections are the sections of the Pattern template, with the
// heading texts accepted for each.
var templateSections = []struct {
	name    string
	accepts []string
}{
	{"TL;DR", []string{"tl;dr", "tldr"}},
	{"Context", []string{"context"}},
	{"Objectives", []string{"objectives", "work objectives"}},
	{"TODOs", []string{"todos", "todo"}},
	{"Verification", []string{"verification", "verification strategy"}},
}

// Validate checks a plan of project against the rules in the package
// documentation.
func Validate(project string, p *Plan) Report {
	var r Report
	validateFile(project, p, &r)
	if p.Invalid != "" {
		r.errorf(0, "%s", p.Invalid)
		return r
	}
	validateTasks(project, p, &r)

	have := map[string]bool{}
	for _, s := range p.Sections {
		have[strings.ToLower(strings.TrimRight(s.Title, ": "))] = true
	}
	for _, ts := range templateSections {
		found := false
		for _, a := range ts.accepts {
			found = found || have[a]
		}
		if !found {
			r.warnf(0, "no ## %s section; add one as in the Pattern template", ts.name)
		}
	}

	switch {
	case p.EffortLine == 0:
		r.warnf(0, "no **Estimated Effort**; add a line like \"**Estimated Effort**: Medium\" under ## TL;DR (one of %s)", strings.Join(efforts, ", "))
	case !knownEffort(p.Effort):
		r.warnf(p.EffortLine, "unknown **Estimated Effort** %q; use one of %s", p.Effort, strings.Join(efforts, ", "))
	}
	return r
}

// knownEffort accepts a value whose first word is one of efforts, so that
// "Medium (two days)" is fine.
func knownEffort(v string) bool {
	f := strings.FieldsFunc(v, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') })
	if len(f) == 0 {
		return false
	}
	for _, e := range append(slices.Clone(efforts), effortSynonyms...) {
		if strings.EqualFold(f[0], e) {
			return true
		}
	}
	return false
}

func validateFile(project string, p *Plan, r *Report) {
	if p.Path == "" {
		r.errorf(0, "the plan has no file path; load it from .weave/plans/ with Load or Find")
		return
	}
	dir, err := filepath.Abs(PlansDir(project))
	if err != nil {
		r.errorf(0, "cannot resolve the plans directory of %s: %v", project, err)
		return
	}
	path, err := filepath.Abs(p.Path)
	if err != nil {
		r.errorf(0, "cannot resolve plan path %s: %v", p.Path, err)
		return
	}
	if !within(dir, path) {
		r.errorf(0, "plan %s is outside %s; move it into .weave/plans/", p.Path, dir)
		return
	}
	if err := checkPlansDir(dir); err != nil {
		r.errorf(0, "%v", err)
		return
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		r.errorf(0, "plan file %s does not exist (moved or deleted?); run `weave plan list` to see the plans", p.Path)
		return
	} else if err != nil {
		r.errorf(0, "cannot read plan file %s: %v", p.Path, err)
		return
	}
	// A symlink in .weave/plans that leads elsewhere is outside too.
	realDir, err1 := filepath.EvalSymlinks(dir)
	realPath, err2 := filepath.EvalSymlinks(path)
	if err1 == nil && err2 == nil && !within(realDir, realPath) {
		r.errorf(0, "plan %s is a link to %s, outside .weave/plans; copy the plan into .weave/plans/ instead", p.Path, realPath)
	}
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func validateTasks(project string, p *Plan, r *Report) {
	work := slices.DeleteFunc(slices.Clone(p.Tasks), func(t Task) bool { return t.Verification && p.HasTODOs })
	if len(work) == 0 {
		if p.HasTODOs {
			r.errorf(0, "no task in the ## TODOs section; add items like \"- [ ] 1. Title\" under it")
		} else {
			r.errorf(0, "no task in the plan; add task items like \"- [ ] 1. Title\" (under a ## TODOs section)")
		}
		return
	}

	// The Verification checklist is numbered on its own, if at all, and its
	// items are checks rather than steps: no What or Acceptance to ask for.
	first := map[int]Task{}
	var numbers []int
	for _, t := range p.Tasks {
		if t.Number == 0 {
			continue
		}
		if f, dup := first[t.Number]; dup {
			r.errorf(t.Line, "task number %d is used twice (lines %d and %d); give each task its own number", t.Number, f.Line, t.Line)
			continue
		}
		first[t.Number] = t
		if !t.Verification || !p.HasTODOs {
			numbers = append(numbers, t.Number)
		}
	}
	sort.Ints(numbers)
	if len(numbers) > 0 && numbers[0] > 1 {
		r.warnf(first[numbers[0]].Line, "task numbers start at %d; number the first task 1", numbers[0])
	}
	for i := 1; i < len(numbers); i++ {
		if numbers[i] > numbers[i-1]+1 {
			r.warnf(first[numbers[i]].Line, "task numbers jump from %d to %d; renumber the tasks or add the missing ones", numbers[i-1], numbers[i])
		}
	}

	// Tasks missing the same fields make one warning, not one per task:
	// a plan of many bare tasks is one thing to fix.
	var lacking []string // the missing fields, in the order first seen
	lackers := map[string][]Task{}
	for _, t := range p.Tasks {
		name := taskName(t)
		if p.HasTODOs && !t.Verification {
			var missing []string
			if t.What == "" {
				missing = append(missing, "**What**")
			}
			if t.Acceptance == "" {
				missing = append(missing, "**Acceptance**")
			}
			if len(missing) > 0 {
				key := strings.Join(missing, " and ")
				if lackers[key] == nil {
					lacking = append(lacking, key)
				}
				lackers[key] = append(lackers[key], t)
			}
		}
		for _, f := range t.FileRefs() {
			checkFileRef(project, t, name, f, r)
		}
		checkBytes(t, name, r)
	}
	for _, key := range lacking {
		ts := lackers[key]
		if len(ts) == 1 {
			r.warnf(ts[0].Line, "%s has no %s; add the field so the task says what to do and how to check it", taskName(ts[0]), key)
			continue
		}
		r.warnf(ts[0].Line, "%s have no %s; add the fields so each task says what to do and how to check it", taskNames(ts), key)
	}
}

// checkBytes reports the bytes of a task that keep it from running as
// written. Blocks run byte for byte, whatever their encoding, but a shell
// takes its script as an argument, which cannot hold a NUL byte.
func checkBytes(t Task, name string, r *Report) {
	if !utf8.ValidString(t.Title) {
		r.warnf(t.Line, "%s: the title is not valid UTF-8 (it shows as %q); save the plan as UTF-8", name, strings.ToValidUTF8(t.Title, "\uFFFD"))
	}
	for _, b := range t.Blocks {
		if !b.IsShell() {
			continue
		}
		if i := strings.IndexByte(b.Code, 0); i >= 0 {
			r.errorf(b.Line+1+strings.Count(b.Code[:i], "\n"), "%s: the %s block holds a NUL byte, which no shell can run; remove it", name, b.Lang)
		}
	}
}

// taskNames names several tasks: "tasks 1-4, 7 and 9" when they are
// numbered, else the first few titles and how many more.
func taskNames(ts []Task) string {
	var nums []int
	for _, t := range ts {
		if t.Number <= 0 {
			nums = nil
			break
		}
		nums = append(nums, t.Number)
	}
	var parts []string
	if len(nums) == len(ts) {
		for i := 0; i < len(nums); {
			j := i
			for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
				j++
			}
			if j > i {
				parts = append(parts, fmt.Sprintf("%d-%d", nums[i], nums[j]))
			} else {
				parts = append(parts, fmt.Sprint(nums[i]))
			}
			i = j + 1
		}
	} else {
		const shown = 3
		for i, t := range ts {
			if i == shown {
				parts = append(parts, fmt.Sprintf("%d more", len(ts)-shown))
				break
			}
			parts = append(parts, fmt.Sprintf("%q", t.Title))
		}
	}
	if len(parts) == 1 {
		return "tasks " + parts[0]
	}
	return "tasks " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func taskName(t Task) string {
	if t.Number > 0 {
		return fmt.Sprintf("task %d", t.Number)
	}
	return fmt.Sprintf("task %q", t.Title)
}

func checkFileRef(project string, t Task, name string, f FileRef, r *Report) {
	if filepath.IsAbs(f.Path) || strings.HasPrefix(f.Path, "/") || strings.HasPrefix(f.Path, "~") {
		r.warnf(t.Line, "%s: file %s is absolute; write it relative to the project root", name, f.Path)
		return
	}
	path := filepath.Join(project, filepath.FromSlash(f.Path))
	if !within(filepath.Clean(project), path) {
		r.warnf(t.Line, "%s: file %s is outside the project; list only files inside it", name, f.Path)
		return
	}
	if f.New || strings.ContainsAny(f.Path, "*?[") {
		return
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		r.warnf(t.Line, "%s: file %s does not exist; fix the path, or mark it (new) if the task creates it", name, f.Path)
	}
}
