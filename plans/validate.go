package plans

import (
	"bytes"
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
	validateDeps(p, r)
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

// validateDeps checks what tasks wait for: every entry is the number of
// one other task of the plan, a TODO never waits for the Verification
// checklist (which waits for every TODO), and no tasks wait for each other
// in a cycle. A start would otherwise wait forever.
func validateDeps(p *Plan, r *Report) {
	if !p.HasDeps() && !hasDepText(p) {
		return
	}
	byNum := p.numbered()
	edges := make([][]int, len(p.Tasks))
	for i, t := range p.Tasks {
		name := taskName(t)
		_, badField := parseDepends(t.Depends)
		_, badTag := parseDepends(afterTag(p, t))
		for _, b := range append(badField, badTag...) {
			r.errorf(t.Line, "%s: %q is not a task number; write the numbers of the tasks it waits for, as in **Depends**: 1, 3", name, b)
		}
		for _, n := range t.After {
			if n == t.Number {
				r.errorf(t.Line, "%s depends on itself; remove %d from what it waits for", name, n)
				continue
			}
			idx := byNum[n]
			switch {
			case len(idx) == 0:
				if u, ok := p.ByOrdinal(n); ok && u.Number == 0 {
					r.errorf(t.Line, "%s depends on task %d, but no task is numbered %d (the item on line %d has no number); number the task it waits for", name, n, n, u.Line)
				} else {
					r.errorf(t.Line, "%s depends on task %d, which is not in the plan; use the number of a task in the plan", name, n)
				}
				continue
			case len(idx) > 1:
				r.errorf(t.Line, "%s depends on task %d, but %d tasks are numbered %d (lines %d and %d); give each task its own number", name, n, len(idx), n, p.Tasks[idx[0]].Line, p.Tasks[idx[1]].Line)
				continue
			}
			if u := p.Tasks[idx[0]]; u.Verification && !t.Verification {
				r.errorf(t.Line, "%s depends on %d, an item of the Verification checklist, which runs after every task; drop the dependency or move the check into the TODOs", name, n)
				continue
			}
			edges[i] = append(edges[i], idx[0])
		}
	}
	for _, cycle := range cycles(edges) {
		// A long cycle is named by its ends: the message stays a line.
		const shown = 8
		parts := make([]string, 0, shown+3)
		for k, i := range cycle {
			if k == shown-1 && len(cycle) > shown {
				parts = append(parts, "…", fmt.Sprint(p.Tasks[cycle[len(cycle)-1]].Ordinal()))
				break
			}
			parts = append(parts, fmt.Sprint(p.Tasks[i].Ordinal()))
		}
		parts = append(parts, parts[0])
		size := ""
		if len(cycle) > shown {
			size = fmt.Sprintf(" of %d tasks", len(cycle))
		}
		r.errorf(p.Tasks[cycle[0]].Line, "tasks %s form a cycle%s (each waits for the next), so none of them can start; remove one of these dependencies", strings.Join(parts, " → "), size)
	}
}

// hasDepText reports whether any task has a **Depends** field or an
// [after: ...] tag, which may hold no number that could be read.
func hasDepText(p *Plan) bool {
	for _, t := range p.Tasks {
		if t.Depends != "" || afterTag(p, t) != "" {
			return true
		}
	}
	return false
}

// afterTag returns the values of t's [after: ...] tags as the parser read
// them from its line.
func afterTag(p *Plan, t Task) string {
	if t.Mark+2 > len(p.Src) {
		return ""
	}
	line := p.Src[t.Mark+2:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	if !mayHaveAfterTag(line) {
		return "" // most lines: no need to split the tags again
	}
	_, rest := splitNumber(strings.TrimSpace(string(line)))
	_, tags := splitTags(rest)
	return tags.after
}

// mayHaveAfterTag reports whether "[after" appears in line, in any case.
func mayHaveAfterTag(line []byte) bool {
	const want = "after"
	for i := bytes.IndexByte(line, '['); i >= 0; {
		if rest := line[i+1:]; len(rest) >= len(want) && bytes.EqualFold(rest[:len(want)], []byte(want)) {
			return true
		}
		j := bytes.IndexByte(line[i+1:], '[')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// cycles returns one cycle of each group of tasks that wait for each other
// (a strongly connected component of edges with more than one task), as
// task indexes starting at the group's first task in the document, each
// waiting for the next and the last for the first. Groups come in document
// order.
func cycles(edges [][]int) [][]int {
	n := len(edges)
	index := make([]int, n) // 0: not yet visited, else visit order + 1
	low := make([]int, n)
	onStack := make([]bool, n)
	var stack []int
	var groups [][]int
	counter := 0
	var visit func(v int)
	visit = func(v int) {
		counter++
		index[v], low[v] = counter, counter
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges[v] {
			if index[w] == 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var g []int
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			g = append(g, w)
			if w == v {
				break
			}
		}
		if len(g) > 1 {
			groups = append(groups, g)
		}
	}
	for v := range n {
		if index[v] == 0 {
			visit(v)
		}
	}
	out := make([][]int, 0, len(groups))
	for _, g := range groups {
		out = append(out, cycleThrough(edges, g))
	}
	sort.Slice(out, func(a, b int) bool { return out[a][0] < out[b][0] })
	return out
}

// cycleThrough finds the shortest cycle through the group's first task in
// the document, staying inside the group.
func cycleThrough(edges [][]int, group []int) []int {
	in := make(map[int]bool, len(group))
	first := group[0]
	for _, v := range group {
		in[v] = true
		first = min(first, v)
	}
	prev := map[int]int{first: -1}
	queue := []int{first}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range edges[v] {
			if w == first {
				var path []int
				for u := v; u != -1; u = prev[u] {
					path = append(path, u)
				}
				slices.Reverse(path)
				return path
			}
			if _, seen := prev[w]; !seen && in[w] {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return group // not reached: a group's tasks reach each other
}
