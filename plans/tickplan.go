package plans

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/weavehq/weave/internal/atomicfile"
)

// SetDoneIn is SetDone for a task of p, the plan as last read, at a cost
// that does not grow with the plan. When the file is still the version p
// was read from (a stat vouches for it, else its bytes are compared), the
// mark is patched in the file where it stands (see patchMarks) and in p
// itself: flipping a checkbox between "[ ]" and "[x]" never changes how the
// rest reads, so nothing is parsed or copied. In any other case it is
// SetDone, which finds the task again and returns a new plan.
//
// SetDoneIn updates p in place and returns it: p.Src and p.Tasks[t.Index]
// change. Callers that share p between goroutines must serialize its ticks
// with their reads of it.
func SetDoneIn(p *Plan, t Task, done bool) (*Plan, error) {
	return SetAllDoneIn(p, []Task{t}, done)
}

// SetAllDoneIn is SetDoneIn for several tasks of p at once, with one write
// of the file and one fsync: the marks are patched together where they
// stand, or, when the file is not the version p was read from, SetAllDone
// finds each task again. Tasks already in the wanted state are left alone.
func SetAllDoneIn(p *Plan, ts []Task, done bool) (*Plan, error) {
	var offs []int
	for _, t := range ts {
		if t.Index < 0 || t.Index >= len(p.Tasks) || p.Tasks[t.Index].Mark != t.Mark || !same(p.Tasks[t.Index], t) ||
			t.Mark < 1 || t.Mark+1 >= len(p.Src) {
			return SetAllDone(p.Path, ts, done)
		}
		if (p.Src[t.Mark] != ' ') != done && !slices.Contains(offs, t.Mark) {
			offs = append(offs, t.Mark)
		}
	}
	if len(offs) == 0 {
		return p, nil
	}
	want := p.file
	if _, ok := p.unchanged(); !ok {
		// Read only when a stat cannot vouch for the file.
		src, err := readPlanFile(p.Path)
		if err != nil {
			return nil, fmt.Errorf("tick task in %s: %w", p.Path, err)
		}
		if !bytes.Equal(src, p.Src) {
			return SetAllDone(p.Path, ts, done)
		}
		want = fileKey{}
	}
	c := byte(' ')
	if done {
		c = 'x'
	}
	arounds := make([][]byte, len(offs))
	for i, off := range offs {
		arounds[i] = p.Src[off-1 : off+2]
	}
	fi, err := patchMarks(p.Path, offs, arounds, c, len(p.Src), want)
	switch {
	case errors.Is(err, errStale):
		return SetAllDone(p.Path, ts, done)
	case errors.Is(err, errNoPatch):
		return rewriteMarks(p, ts, done)
	case err != nil:
		return nil, fmt.Errorf("tick task in %s: %w", p.Path, err)
	}
	for _, t := range ts {
		if slices.Contains(offs, t.Mark) {
			p.Src[t.Mark] = c
			p.Tasks[t.Index].Done = done
		}
	}
	setFile(p, p.Path, fi)
	return p, nil
}

// rewriteMarks is SetAllDoneIn for a file that cannot be patched in place:
// the plan is written as a new file, atomically, and a new plan returned.
func rewriteMarks(p *Plan, ts []Task, done bool) (*Plan, error) {
	// patch copies: p.Src stays what p was parsed from.
	out := p.Src
	for _, t := range ts {
		out, _ = patch(out, t.Mark, done)
	}
	if err := atomicfile.WriteFile(p.Path, out, 0o644); err != nil {
		return nil, fmt.Errorf("tick task in %s: %w", p.Path, err)
	}
	fi, err := os.Stat(p.Path)
	if err != nil {
		return nil, fmt.Errorf("tick task in %s: %w", p.Path, err)
	}
	np := *p
	np.Src = out
	np.Tasks = slices.Clone(p.Tasks)
	for _, t := range ts {
		np.Tasks[t.Index].Done = out[t.Mark] != ' '
	}
	setFile(&np, p.Path, fi)
	return &np, nil
}

// Reload reads p's file again. When the file is unchanged, or differs from
// what p was parsed from only in checkbox marks of p's own tasks (a tick by
// another writer, such as the plan_check tool), the new plan is derived from
// p without parsing; any other change is parsed in full.
func Reload(p *Plan) (*Plan, error) {
	src, fi, err := readChanged(p)
	if err != nil {
		return nil, err
	}
	if src == nil {
		return p, nil
	}
	if np, ok := marksOnly(p, src); ok {
		setFile(np, p.Path, fi)
		return np, nil
	}
	np := Parse(src)
	setFile(np, p.Path, fi)
	return np, nil
}

// readChanged reads p's file again unless a stat vouches that it is still
// the version p holds; then src is nil.
func readChanged(p *Plan) (src []byte, fi fs.FileInfo, err error) {
	fi, ok := p.unchanged()
	if ok {
		return nil, nil, nil
	}
	if fi == nil {
		if fi, err = os.Stat(p.Path); err != nil {
			return nil, nil, fmt.Errorf("read plan %s: %w", p.Path, err)
		}
	}
	if src, err = readPlanFile(p.Path); err != nil {
		return nil, nil, fmt.Errorf("read plan %s: %w", p.Path, err)
	}
	return src, fi, nil
}

// Refresh is Reload for a plan its caller owns and shares with no other
// goroutine: when the file differs from p only in checkbox marks, p itself
// is brought up to date (its Src and its tasks' Done) and returned, which
// costs a read and a compare but no parse and no copy of the tasks, however
// large the plan. Any other change is parsed in full into a new plan.
func Refresh(p *Plan) (*Plan, error) {
	src, fi, err := readChanged(p)
	if err != nil {
		return nil, err
	}
	if src == nil {
		return p, nil
	}
	if changed, ok := markChanges(p, src); ok {
		for _, i := range changed {
			p.Tasks[i].Done = src[p.Tasks[i].Mark] != ' '
		}
		p.Src = src
		setFile(p, p.Path, fi)
		return p, nil
	}
	np := Parse(src)
	setFile(np, p.Path, fi)
	return np, nil
}

// marksOnly derives the plan of src from p when the two texts differ only
// in the marks of p's tasks.
func marksOnly(p *Plan, src []byte) (*Plan, bool) {
	changed, ok := markChanges(p, src)
	if !ok {
		return nil, false
	}
	c := *p
	if len(changed) > 0 {
		c.Tasks = slices.Clone(p.Tasks)
		for _, i := range changed {
			c.Tasks[i].Done = src[p.Tasks[i].Mark] != ' '
		}
	}
	c.Src = src
	return &c, true
}

// markChanges lists the tasks of p whose mark differs in src, when src
// differs from p.Src in nothing else. The text between two marks is
// compared in one piece, so the cost is a memcmp of the file and a step per
// task.
func markChanges(p *Plan, src []byte) ([]int, bool) {
	if len(src) != len(p.Src) {
		return nil, false
	}
	var changed []int
	from := 0
	for i := range p.Tasks {
		m := p.Tasks[i].Mark
		if m < from || m >= len(src) || !bytes.Equal(src[from:m], p.Src[from:m]) {
			return nil, false
		}
		if src[m] != p.Src[m] {
			if !isMark(src[m]) {
				return nil, false
			}
			if p.Tasks[i].Done != (src[m] != ' ') {
				changed = append(changed, i)
			}
		}
		from = m + 1
	}
	return changed, bytes.Equal(src[from:], p.Src[from:])
}

// unchanged reports, from a stat alone, whether p's file is still the
// version p.Src was read from or written as: the same size, modification
// and change times and inode (where the platform gives them). A writer that
// renames a new file over the plan, as editors and weave do, always makes a
// new version; one that rewrites the file in place to the same size within
// one tick of the file system's clock could go unseen, as it could by an
// editor that compares modification times. fi is the stat, nil when it
// failed.
func (p *Plan) unchanged() (fs.FileInfo, bool) {
	if p.Path == "" || p.file == (fileKey{}) {
		return nil, false
	}
	fi, err := os.Stat(p.Path)
	if err != nil {
		return nil, false
	}
	return fi, keyOf(fi) == p.file && int64(len(p.Src)) == fi.Size()
}
