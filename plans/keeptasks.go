package plans

import (
	"bytes"
	"fmt"
	"strings"
)

// A run owns the list of its plan's tasks as it owns their checkbox bytes:
// a task does not leave the plan during a run. A task whose item is gone
// from the file, or no longer a checkbox, is put back by KeepMarks, its
// item's bytes as the run last had them, next to its neighbours; a task
// that cannot be put back where it is found again as itself is reported
// lost, and a run that loses a task is not done. Between runs a person
// removes what they like.

// Kept is what KeepMarks put right in a plan's file.
type Kept struct {
	// Marks are the tasks whose checkbox it put back, as they were found.
	Marks []Task
	// Restored are the tasks it put back in the file, as the owner had
	// them: their items were gone, or no longer checkboxes.
	Restored []Task
	// Lost are the tasks gone from the file that it could not put back.
	Lost []Task
}

// RemovedError says that tasks left a plan during a run and could not be
// put back: their verify blocks never ran, so the plan is not done.
type RemovedError struct {
	Plan  string
	Tasks []Task
}

func (e *RemovedError) Error() string {
	labels := make([]string, len(e.Tasks))
	for i, t := range e.Tasks {
		labels[i] = "task " + t.Label()
	}
	was, it := "was", "it"
	if len(e.Tasks) > 1 {
		was, it = "were", "them"
	}
	return fmt.Sprintf("%s of %s %s removed from the plan during the run and could not be put back; tasks are not removed during a run, and a task not ticked through plan_check is not done: put %s back, or start the run again to take the plan as it now is",
		strings.Join(labels, ", "), e.Plan, was, it)
}

// MissingTasks lists the tasks of owner that next no longer has: each task
// of owner is matched to one task of next by number and title (its own
// position first); one left without a match that has the same number as a
// task of next left without one (the same position, for tasks without a
// number) was renamed, which a person may do during a run, as the task
// stays open and still goes through the door; the others are missing, in
// owner's order.
func MissingTasks(owner, next *Plan) []Task {
	used := make([]bool, len(next.Tasks))
	var left []Task
	for _, t := range owner.Tasks {
		j := -1
		if t.Index < len(next.Tasks) && !used[t.Index] && same(next.Tasks[t.Index], t) {
			j = t.Index
		} else {
			for i, c := range next.Tasks {
				if !used[i] && same(c, t) {
					j = i
					break
				}
			}
		}
		if j < 0 {
			left = append(left, t)
			continue
		}
		used[j] = true
	}
	var out []Task
	for _, t := range left {
		j := -1
		for i, c := range next.Tasks {
			if !used[i] && c.Verification == t.Verification && (t.Number > 0 && c.Number == t.Number || t.Number == 0 && c.Number == 0 && c.Index == t.Index) {
				j = i
				break
			}
		}
		if j < 0 {
			out = append(out, t)
			continue
		}
		used[j] = true
	}
	return out
}

// restoreTask puts task t of owner back into src, the file now, whose plan
// is cur: its item's bytes go right after the item of the nearest task
// before it that cur still has, else right before the nearest one after
// it, else at the end of the file. A place is taken only when the file
// parsed again holds the task there as itself (the same title, mark,
// checklist and blocks) and every other task as it was; ok false, no place
// fits, leaves src alone.
func restoreTask(owner, cur *Plan, t Task) (out []byte, ok bool) {
	item := bytes.Clone(owner.Src[t.Start:t.End])
	if len(item) == 0 || item[len(item)-1] != '\n' {
		item = append(item, '\n')
	}
	var places []int
	for i := t.Index - 1; i >= 0; i-- {
		if c, found := cur.Lookup(owner.Tasks[i]); found {
			places = append(places, c.End)
			break
		}
	}
	for i := t.Index + 1; i < len(owner.Tasks); i++ {
		if c, found := cur.Lookup(owner.Tasks[i]); found {
			places = append(places, c.Start)
			break
		}
	}
	if len(cur.Tasks) > 0 {
		places = append(places, len(cur.Src))
	}
	for _, pos := range places {
		if out, ok := insertItem(cur, t, item, pos); ok {
			return out, true
		}
	}
	return nil, false
}

// insertItem puts item, task t's, into cur's file at byte pos, and says
// whether the result holds t there as itself and cur's tasks as they were.
func insertItem(cur *Plan, t Task, item []byte, pos int) ([]byte, bool) {
	src := cur.Src
	out := make([]byte, 0, len(src)+len(item)+1)
	out = append(out, src[:pos]...)
	if pos > 0 && src[pos-1] != '\n' {
		out = append(out, '\n')
	}
	start := len(out)
	out = append(out, item...)
	out = append(out, src[pos:]...)
	np := Parse(out)
	if len(np.Tasks) != len(cur.Tasks)+1 || len(MissingTasks(cur, np)) != 0 {
		return nil, false
	}
	for _, c := range np.Tasks {
		if c.Start == start {
			return out, same(c, t) && c.Done == t.Done && c.Verification == t.Verification && SameBlocks(c.Blocks, t.Blocks)
		}
	}
	return nil, false
}

// SameBlocks reports whether a and b are the same blocks (info and code), in order.
func SameBlocks(a, b []Block) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Info != b[i].Info || a[i].Code != b[i].Code {
			return false
		}
	}
	return true
}

// restoreTasks puts back into np the tasks of owner it no longer has, one
// at a time in owner's order; it returns the plan of the result (np when
// none was missing) and which tasks it put back and which it could not.
func restoreTasks(owner, np *Plan) (cur *Plan, restored, lost []Task) {
	cur = np
	for _, t := range MissingTasks(owner, np) {
		out, ok := restoreTask(owner, cur, t)
		if !ok {
			lost = append(lost, t)
			continue
		}
		cur = Parse(out)
		restored = append(restored, t)
	}
	return cur, restored, lost
}
