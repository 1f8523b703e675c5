package plans

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/weavehq/weave/internal/atomicfile"
)

// TaskGoneError says that a task to tick is no longer in its plan file.
type TaskGoneError struct {
	Path   string
	Number int
	Title  string
}

func (e *TaskGoneError) Error() string {
	return fmt.Sprintf("task %s is no longer in %s (removed or renamed since it was read); the file was left as it is: reload the plan and pick the task again", TaskLabel(e.Number, e.Title), e.Path)
}

// setRetries bounds how often SetDone starts over when the file changes
// while it is being ticked.
const setRetries = 5

// SetDone ticks (done) or unticks one task by patching the one byte at its
// Mark and writing the file atomically; no other byte changes. Ticking writes
// "x"; a task that is already in the wanted state is left alone (an "X" stays
// "X"). If the file changed since t was parsed, the task is found again by
// Number and Title; when it is gone SetDone returns a *TaskGoneError and does
// not write. It returns the plan as it now is on disk.
//
// SetDone does not lock the file against editors; it re-reads the file just
// before writing and starts over if it changed, which leaves only a very
// short window in which a concurrent edit could be overwritten. Callers in
// one process must not tick the same file concurrently.
func SetDone(path string, t Task, done bool) (*Plan, error) {
	return setDone(path, []Task{t}, done, nil)
}

// SetAllDone is SetDone for several tasks of one plan file, written once:
// each task is found as SetDone finds it, and when one is gone nothing is
// written.
func SetAllDone(path string, ts []Task, done bool) (*Plan, error) {
	return setDone(path, ts, done, nil)
}

// setDone is SetAllDone with a hook that runs just before the file is
// checked for concurrent changes, so tests can make one.
func setDone(path string, ts []Task, done bool, beforeCheck func()) (*Plan, error) {
	for range setRetries {
		src, err := readPlanFile(path)
		if err != nil {
			return nil, fmt.Errorf("tick task: %w", err)
		}
		out, p := src, (*Plan)(nil)
		for _, t := range ts {
			if out, p, err = setMark(out, t, done); err != nil {
				break
			}
		}
		if err != nil {
			var gone *TaskGoneError
			if errors.As(err, &gone) {
				gone.Path = path
			}
			return nil, err
		}
		if p == nil {
			p = Parse(src)
		}
		if bytes.Equal(out, src) {
			fi, err := os.Stat(path)
			if err != nil {
				return nil, fmt.Errorf("tick task in %s: %w", path, err)
			}
			setFile(p, path, fi)
			return p, nil
		}
		// Start over if someone wrote the file while we worked on it.
		if beforeCheck != nil {
			beforeCheck()
		}
		if now, err := readPlanFile(path); err != nil || !bytes.Equal(now, src) {
			continue
		}
		if err := atomicfile.WriteFile(path, out, 0o644); err != nil {
			return nil, fmt.Errorf("tick task in %s: %w", path, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("tick task in %s: %w", path, err)
		}
		setFile(p, path, fi)
		return p, nil
	}
	return nil, fmt.Errorf("tick task in %s: the file kept changing while it was being written; try again once it is saved", path)
}

// setMark returns src with t's mark set for done, and the plan parsed from
// the result. out aliases src when nothing changes.
func setMark(src []byte, t Task, done bool) (out []byte, p *Plan, err error) {
	// Fast path: the file is as it was, the mark is where t says.
	if t.Mark > 0 && t.Mark+1 < len(src) && src[t.Mark-1] == '[' && src[t.Mark+1] == ']' && isMark(src[t.Mark]) {
		out, _ = patch(src, t.Mark, done)
		p = Parse(out)
		if got, ok := taskAt(p, t.Mark); ok && same(got, t) && got.Done == done {
			return out, p, nil
		}
	}
	// The file changed: find the task again.
	cur := Parse(src)
	found, ok := findTask(cur, t, done)
	if !ok {
		return nil, nil, &TaskGoneError{Number: t.Number, Title: t.Title}
	}
	out, changed := patch(src, found.Mark, done)
	if !changed {
		return out, cur, nil
	}
	p = Parse(out)
	if got, ok := taskAt(p, found.Mark); !ok || !same(got, t) || got.Done != done {
		return nil, nil, fmt.Errorf("ticking %s would change how the rest of the plan reads; edit the checkbox on line %d by hand", taskName(t), found.Line)
	}
	return out, p, nil
}

func isMark(c byte) bool { return c == ' ' || c == 'x' || c == 'X' }

// patch returns a copy of src with the mark at off set for done, or src
// itself when the mark already says so.
func patch(src []byte, off int, done bool) ([]byte, bool) {
	if (src[off] != ' ') == done {
		return src, false
	}
	out := make([]byte, len(src))
	copy(out, src)
	if done {
		out[off] = 'x'
	} else {
		out[off] = ' '
	}
	return out, true
}

func taskAt(p *Plan, mark int) (Task, bool) {
	// Tasks are in file order, so search by offset.
	lo, hi := 0, len(p.Tasks)
	for lo < hi {
		m := (lo + hi) / 2
		if p.Tasks[m].Mark < mark {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(p.Tasks) && p.Tasks[lo].Mark == mark {
		return p.Tasks[lo], true
	}
	return Task{}, false
}

// same reports whether a and b are one task: the same number and title. A
// title that is not UTF-8 matches its U+FFFD form too, which is how it
// arrives when it crossed the plugin protocol (gRPC strings are UTF-8).
func same(a, b Task) bool {
	if a.Number != b.Number {
		return false
	}
	if a.Title == b.Title {
		return true
	}
	if utf8.ValidString(a.Title) && utf8.ValidString(b.Title) {
		return false
	}
	return strings.ToValidUTF8(a.Title, "\uFFFD") == strings.ToValidUTF8(b.Title, "\uFFFD")
}

// findTask finds t in p by Number and Title. Among several candidates it
// prefers one still to be changed, then the one nearest t's old position.
func findTask(p *Plan, t Task, done bool) (Task, bool) {
	best, ok := Task{}, false
	score := func(c Task) int {
		d := c.Index - t.Index
		if d < 0 {
			d = -d
		}
		if c.Done == done {
			d += len(p.Tasks) + 1
		}
		return d
	}
	for _, c := range p.Tasks {
		if same(c, t) && (!ok || score(c) < score(best)) {
			best, ok = c, true
		}
	}
	return best, ok
}
