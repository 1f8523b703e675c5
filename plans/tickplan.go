package plans

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/weavehq/weave/internal/atomicfile"
)

// SetDoneIn is SetDone for a task of p, the plan as last read. When the file
// still holds exactly the bytes p was parsed from, the mark is patched and
// the new plan is derived from p without parsing the file again: flipping a
// checkbox between "[ ]" and "[x]" never changes how the rest reads. In any
// other case it is SetDone, which finds the task again.
func SetDoneIn(p *Plan, t Task, done bool) (*Plan, error) {
	if t.Index < 0 || t.Index >= len(p.Tasks) || p.Tasks[t.Index].Mark != t.Mark || !same(p.Tasks[t.Index], t) {
		return SetDone(p.Path, t, done)
	}
	if _, ok := p.unchanged(); !ok {
		// Read only when a stat cannot vouch for the file.
		src, err := readPlanFile(p.Path)
		if err != nil {
			return nil, fmt.Errorf("tick task in %s: %w", p.Path, err)
		}
		if !bytes.Equal(src, p.Src) {
			return SetDone(p.Path, t, done)
		}
	}
	// patch copies: p.Src stays what p was parsed from.
	out, changed := patch(p.Src, t.Mark, done)
	if !changed {
		return p, nil
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
	np.Tasks[t.Index].Done = done
	setFile(&np, p.Path, fi)
	return &np, nil
}

// Reload reads p's file again. When the file is unchanged, or differs from
// what p was parsed from only in checkbox marks of p's own tasks (a tick by
// another writer, such as the plan_check tool), the new plan is derived from
// p without parsing; any other change is parsed in full.
func Reload(p *Plan) (*Plan, error) {
	fi, ok := p.unchanged()
	if ok {
		return p, nil
	}
	if fi == nil {
		var err error
		if fi, err = os.Stat(p.Path); err != nil {
			return nil, fmt.Errorf("read plan %s: %w", p.Path, err)
		}
	}
	src, err := readPlanFile(p.Path)
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", p.Path, err)
	}
	if np, ok := marksOnly(p, src); ok {
		setFile(np, p.Path, fi)
		return np, nil
	}
	np := Parse(src)
	setFile(np, p.Path, fi)
	return np, nil
}

// marksOnly derives the plan of src from p when the two texts differ only
// in the marks of p's tasks.
func marksOnly(p *Plan, src []byte) (*Plan, bool) {
	if len(src) != len(p.Src) {
		return nil, false
	}
	var np *Plan
	for i := range src {
		if src[i] == p.Src[i] {
			continue
		}
		t, ok := taskAt(p, i)
		if !ok || !isMark(src[i]) {
			return nil, false
		}
		if np == nil {
			c := *p
			c.Tasks = slices.Clone(p.Tasks)
			np = &c
		}
		np.Tasks[t.Index].Done = src[i] != ' '
	}
	if np == nil {
		c := *p
		np = &c
	}
	np.Src = src
	return np, true
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
