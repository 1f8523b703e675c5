package plans

import (
	"iter"
	"path"
	"strings"
)

// ScheduleOptions say how a run orders a plan's tasks (see Plan.Ready).
type ScheduleOptions struct {
	// InferDeps treats tasks whose Files lists are disjoint as independent
	// (start-work --infer-deps); a task without Files waits for every
	// earlier task and every later one waits for it.
	InferDeps bool
	// Skip reports the tasks the run leaves for a person; nil skips none.
	Skip func(Task) bool
}

// Ready returns the open tasks that may start now, in document order,
// given the tasks running (by Task.Key()). The rules:
//
//   - A task with After waits for each task it names to be Done; one that
//     names a skipped task, itself, or a number no task has is never ready.
//   - A task without After, in a plan where no task has After and without
//     InferDeps, waits for every earlier open TODO the run does not skip:
//     one task at a time, in the document's order, as Plan.NextExcept.
//   - With InferDeps, a task without After waits for every earlier open,
//     not skipped task whose Files overlap its own (a path, or a folder
//     holding it; a glob counts as its folder) or that has no Files; a task
//     without Files waits for every earlier one.
//   - In a plan where some task has After, without InferDeps, a task
//     without After waits for nothing.
//   - A Verification item waits, besides, for every open TODO the run does
//     not skip.
//   - A Serial task starts only when nothing runs, and nothing starts beside
//     it: a ready Serial task ends the list, and is the list when nothing
//     runs and no task before it is ready. While a Serial task runs, nothing
//     is ready.
//   - A skipped or running task is never ready.
//
// With nothing running and no After in the plan, Ready returns at most one
// task, the one NextExcept(o.Skip) returns.
func (p *Plan) Ready(running []string, o ScheduleOptions) []Task {
	s := p.newSchedule(o)
	run := make(map[string]bool, len(running))
	for _, k := range running {
		run[k] = true
	}
	isRunning := func(t Task) bool { return len(run) > 0 && run[t.Key()] }
	for _, t := range p.Tasks {
		if t.Serial && !t.Done && isRunning(t) {
			return nil
		}
	}
	openTODO := false
	for i, t := range p.Tasks {
		if !t.Done && !t.Verification && !s.skipped[i] {
			openTODO = true
			break
		}
	}

	var out []Task
	var before earlier
	if o.InferDeps {
		before = newFileIndex()
	} else {
		before = &orderIndex{}
	}
	for i, t := range p.Tasks {
		if t.Done || s.skipped[i] {
			continue
		}
		blocked := t.Verification && openTODO
		switch {
		case blocked:
		case len(t.After) > 0:
			blocked = s.afterBlocks(t)
		case o.InferDeps || !s.deps:
			blocked = before.blocks(t, s.files(i))
		}
		before.add(t, s.files(i))
		if blocked || isRunning(t) {
			continue
		}
		if t.Serial {
			if len(out) == 0 && len(running) == 0 {
				return []Task{t}
			}
			return out
		}
		out = append(out, t)
	}
	return out
}

// Waits returns the open tasks t still waits for, in document order: those
// its After names, and those the rules of Ready make it wait for. It leaves
// out what only delays a start (running tasks beside a Serial one) and
// numbers no task has (Validate reports those).
func (p *Plan) Waits(t Task, o ScheduleOptions) []Task {
	i := t.Index
	if i < 0 || i >= len(p.Tasks) || !same(p.Tasks[i], t) {
		u, ok := p.Lookup(t)
		if !ok {
			return nil
		}
		i = u.Index
	}
	t = p.Tasks[i]
	s := p.newSchedule(o)
	wait := make([]bool, len(p.Tasks))
	if len(t.After) > 0 {
		for _, n := range t.After {
			for j := range s.byNum.tasks(n) {
				wait[j] = !p.Tasks[j].Done
			}
		}
	}
	for j, u := range p.Tasks {
		if j == i || u.Done || s.skipped[j] {
			continue
		}
		switch {
		case t.Verification && !u.Verification:
			wait[j] = true
		case len(t.After) > 0 || j > i:
		case o.InferDeps:
			wait[j] = wait[j] || overlaps(s.files(i), s.files(j))
		case !s.deps:
			wait[j] = wait[j] || u.Verification == t.Verification
		}
	}
	var out []Task
	for j, w := range wait {
		if w {
			out = append(out, p.Tasks[j])
		}
	}
	return out
}

// schedule is what Ready and Waits work out once per call.
type schedule struct {
	p       *Plan
	deps    bool
	byNum   numIndex
	skipped []bool
	keys    [][]string // normalised Files entries, filled on demand (InferDeps)
	known   []bool     // keys[i] has been worked out
}

func (p *Plan) newSchedule(o ScheduleOptions) *schedule {
	s := &schedule{p: p, deps: p.HasDeps(), skipped: make([]bool, len(p.Tasks))}
	if s.deps {
		s.byNum = p.numIndex()
	}
	if o.Skip != nil {
		for i, t := range p.Tasks {
			s.skipped[i] = !t.Done && o.Skip(t)
		}
	}
	if o.InferDeps {
		s.keys = make([][]string, len(p.Tasks))
		s.known = make([]bool, len(p.Tasks))
	}
	return s
}

// afterBlocks reports whether a task the After of t names is not Done, or
// is missing.
func (s *schedule) afterBlocks(t Task) bool {
	for _, n := range t.After {
		found := false
		for j := range s.byNum.tasks(n) {
			if !s.p.Tasks[j].Done {
				return true
			}
			found = true
		}
		if !found {
			return true
		}
	}
	return false
}

// numIndex finds tasks by number, without a slice per number.
type numIndex struct {
	first map[int]int // number → index of the first task with it
	next  []int       // index → index of the next task with the same number, or -1
}

func (p *Plan) numIndex() numIndex {
	x := numIndex{first: make(map[int]int, len(p.Tasks)), next: make([]int, len(p.Tasks))}
	last := make(map[int]int)
	for i, t := range p.Tasks {
		x.next[i] = -1
		if t.Number <= 0 {
			continue
		}
		if j, dup := x.first[t.Number]; dup {
			if l, ok := last[t.Number]; ok {
				j = l
			}
			x.next[j] = i
			last[t.Number] = i
			continue
		}
		x.first[t.Number] = i
	}
	return x
}

// tasks yields the indexes of the tasks numbered n, in document order.
func (x numIndex) tasks(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		j, ok := x.first[n]
		for ok && j >= 0 {
			if !yield(j) {
				return
			}
			j = x.next[j]
		}
	}
}

// files returns task i's Files as normalised paths, nil when the task has
// none or one stands for the whole project (then it overlaps every task).
// Only InferDeps reads them.
func (s *schedule) files(i int) []string {
	if s.keys == nil {
		return nil
	}
	if !s.known[i] {
		s.known[i] = true
		for _, f := range s.p.Tasks[i].FileRefs() {
			k := normFile(f.Path)
			if k == "" {
				s.keys[i] = nil
				break
			}
			s.keys[i] = append(s.keys[i], k)
		}
	}
	return s.keys[i]
}

// normFile turns a Files entry into a clean slash path relative to the
// project, a glob into the folder it lies in; "" is the whole project.
func normFile(p string) string {
	p = strings.ReplaceAll(p, "\\", "/")
	if i := strings.IndexAny(p, "*?["); i >= 0 {
		p = p[:max(0, strings.LastIndexByte(p[:i], '/'))]
	}
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// overlaps reports whether two tasks' normalised Files may touch the same
// file: one lists a path the other lists, or a folder above it; a task
// without Files overlaps every task.
func overlaps(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if x == y || strings.HasPrefix(y, x+"/") || strings.HasPrefix(x, y+"/") {
				return true
			}
		}
	}
	return false
}

// earlier holds the open, not skipped tasks Ready has passed, so that each
// task is checked against them in time linear in its own Files.
type earlier interface {
	add(t Task, files []string)
	blocks(t Task, files []string) bool
}

// orderIndex keeps the document's order: a TODO waits for any earlier open
// TODO, a Verification item for any earlier open item of either kind.
type orderIndex struct{ todo, check bool }

func (o *orderIndex) add(t Task, _ []string) {
	if t.Verification {
		o.check = true
	} else {
		o.todo = true
	}
}

func (o *orderIndex) blocks(t Task, _ []string) bool {
	if t.Verification {
		return o.todo || o.check
	}
	return o.todo
}

// fileIndex holds the Files of the earlier open tasks.
type fileIndex struct {
	any     bool            // some earlier task is open
	unknown bool            // one of them has no Files
	paths   map[string]bool // their paths
	folders map[string]bool // every folder above one of their paths
}

func newFileIndex() *fileIndex {
	return &fileIndex{paths: map[string]bool{}, folders: map[string]bool{}}
}

func (x *fileIndex) add(_ Task, files []string) {
	x.any = true
	if len(files) == 0 {
		x.unknown = true
		return
	}
	for _, f := range files {
		x.paths[f] = true
		for d := path.Dir(f); d != "." && d != "/" && !x.folders[d]; d = path.Dir(d) {
			x.folders[d] = true
		}
	}
}

func (x *fileIndex) blocks(_ Task, files []string) bool {
	if len(files) == 0 {
		return x.any
	}
	if x.unknown {
		return true
	}
	for _, f := range files {
		if x.paths[f] || x.folders[f] {
			return true
		}
		for d := path.Dir(f); d != "." && d != "/"; d = path.Dir(d) {
			if x.paths[d] {
				return true
			}
		}
	}
	return false
}
