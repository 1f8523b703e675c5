package plans

import (
	"bytes"
	"fmt"
	"os"

	"github.com/weavehq/weave/internal/atomicfile"
)

// A run owns the checkbox bytes of its plan: a box changes only through the
// host's tick door, which verifies the task first. A mark that changed any
// other way (a model's edit, a sed in its bash call, an editor) is put back
// by KeepMarks, and a write that would change one is refused with
// MarkChanges. A task that left the file is put back too (keeptasks.go).
// Between runs a person's edits stand as they are.

// wantedMark is the state owner gives t: its own when it has the task, else
// open (a task that appeared is not done until the door says so).
func wantedMark(owner *Plan, t Task) bool {
	if t.Index < len(owner.Tasks) && same(owner.Tasks[t.Index], t) {
		return owner.Tasks[t.Index].Done
	}
	if o, ok := owner.Lookup(t); ok {
		return o.Done
	}
	return false
}

// MarkChanges lists the tasks of next whose checkbox state differs from
// prev's: a task of both whose box was ticked or unticked, and a new task
// that arrives ticked. prev nil is a new file, whose tasks must all be
// open. Text changes, and tasks removed, are not mark changes.
func MarkChanges(prev, next *Plan) []Task {
	var out []Task
	for _, t := range next.Tasks {
		want := false
		if prev != nil {
			want = wantedMark(prev, t)
		}
		if t.Done != want {
			out = append(out, t)
		}
	}
	return out
}

// KeepMarks reads owner's file again and puts right, in one atomic write,
// what changed there without the run: a task of owner that is gone (or no
// longer a checkbox) is put back where it can be (see restoreTask), and
// every checkbox whose state differs from owner's is put back (see
// MarkChanges); the rest of the file, text edits included, stays as it is
// now. It returns the plan as it now is on disk and what it put right, and
// which tasks were gone and could not be put back. An unchanged file costs
// a stat.
func KeepMarks(owner *Plan) (*Plan, Kept, error) {
	for range setRetries {
		np, err := Reload(owner)
		if err != nil {
			return nil, Kept{}, err
		}
		if np == owner {
			return owner, Kept{}, nil
		}
		cur, restored, lost := restoreTasks(owner, np)
		back := MarkChanges(owner, cur)
		kept := Kept{Marks: back, Restored: restored, Lost: lost}
		if len(back) == 0 && len(restored) == 0 {
			return np, kept, nil
		}
		out := bytes.Clone(cur.Src)
		for _, t := range back {
			if t.Done {
				out[t.Mark] = ' '
			} else {
				out[t.Mark] = 'x'
			}
		}
		// Start over if the file changed again while we worked on it.
		if now, err := readPlanFile(np.Path); err != nil || !bytes.Equal(now, np.Src) {
			continue
		}
		if err := atomicfile.WriteFile(np.Path, out, 0o644); err != nil {
			return nil, Kept{}, fmt.Errorf("put back the checkboxes of %s: %w", np.Path, err)
		}
		fi, err := os.Stat(np.Path)
		if err != nil {
			return nil, Kept{}, fmt.Errorf("put back the checkboxes of %s: %w", np.Path, err)
		}
		p, ok := marksOnly(cur, out)
		if !ok {
			p = Parse(out)
		}
		setFile(p, np.Path, fi)
		return p, kept, nil
	}
	return nil, Kept{}, fmt.Errorf("put back the checkboxes of %s: the file kept changing while it was being written", owner.Path)
}
