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
// MarkChanges. Between runs a person's edits stand as they are.

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

// KeepMarks reads owner's file again and puts back every checkbox whose
// state differs from owner's (see MarkChanges), in one atomic write; the
// rest of the file, text edits included, stays as it is now. It returns the
// plan as it now is on disk and the tasks whose marks it put back (as they
// were found). An unchanged file costs a stat.
func KeepMarks(owner *Plan) (*Plan, []Task, error) {
	for range setRetries {
		np, err := Reload(owner)
		if err != nil {
			return nil, nil, err
		}
		if np == owner {
			return owner, nil, nil
		}
		back := MarkChanges(owner, np)
		if len(back) == 0 {
			return np, nil, nil
		}
		out := bytes.Clone(np.Src)
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
			return nil, nil, fmt.Errorf("put back the checkboxes of %s: %w", np.Path, err)
		}
		fi, err := os.Stat(np.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("put back the checkboxes of %s: %w", np.Path, err)
		}
		kept, ok := marksOnly(np, out)
		if !ok {
			kept = Parse(out)
		}
		setFile(kept, np.Path, fi)
		return kept, back, nil
	}
	return nil, nil, fmt.Errorf("put back the checkboxes of %s: the file kept changing while it was being written", owner.Path)
}
