package plans

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Plan is a parsed plan file. Offsets and lines refer to Src.
type Plan struct {
	Path    string    // absolute path of the file, "" when parsed from bytes
	Name    string    // base name without .md
	ModTime time.Time // modification time when read

	Title      string // text of the first level-1 heading, "" if none
	Effort     string // value after **Estimated Effort**:, trimmed, "" if absent
	EffortLine int    // 1-based line of Effort, 0 if absent

	Sections []Section // headings at the top level of the document, in order
	Tasks    []Task
	Src      []byte // the bytes that were parsed

	// HasTODOs reports whether the plan has a TODOs section, in which case
	// only the task items inside it are tasks.
	HasTODOs bool

	// Invalid says why the file could not be read as a plan (it is past
	// MaxPlanSize or MaxNesting); such a plan has no tasks and never runs.
	// It is "" for a plan that was parsed.
	Invalid string

	// file identifies the file's version Src was read from or written as,
	// so that a tick or a reload can tell from a stat that the file is
	// still Src (see unchanged).
	file fileKey
}

// Clone returns a copy of p that shares nothing a tick changes: ticking
// patches a plan's Src and its tasks' Done in place, so a goroutine that
// keeps reading a plan while another ticks it (a worker beside the
// landing queue) holds a clone.
func (p *Plan) Clone() *Plan {
	c := *p
	c.Src = slices.Clone(p.Src)
	c.Tasks = slices.Clone(p.Tasks)
	c.Sections = slices.Clone(p.Sections)
	return &c
}

// Section is a heading at the top level of the document.
type Section struct {
	Title  string // heading text as written, trimmed
	Level  int    // 1 for #, 2 for ##, ...
	Line   int    // 1-based
	Offset int    // byte offset of the heading's line
}

// Task is one task of a plan: a task-list item that is not nested inside
// another task-list item.
type Task struct {
	Index   int    // position among tasks, 0-based
	Number  int    // N from "- [ ] N. Title" (0 when unnumbered)
	Title   string // rest of the checkbox line after the number, without [key: value] tags
	Done    bool   // [x] or [X]
	Mark    int    // byte offset of the character between the brackets
	Line    int    // 1-based line of the checkbox
	Start   int    // byte offset of the start of the item's first line
	End     int    // byte offset just past the item's last line (with nested content)
	Section string // title of the nearest top-level heading above

	What, Files, Acceptance string  // field texts when present, "" otherwise
	Category                string  // from a [category: x] tag
	Blocks                  []Block // fenced code blocks inside the item, in order

	// Depends is the **Depends** field's text as written ("1, 3"), ""
	// when absent; After is what it and an [after: 1, 3] tag name.
	Depends string
	// After lists the numbers of the tasks this one waits for, ascending,
	// from the **Depends** field (also **Depends on**, **After**) and the
	// [after: ...] tag together. Entries that are not task numbers are
	// left out here and reported by Validate.
	After []int
	// Serial marks a task that never runs beside another: the [serial]
	// tag on its line.
	Serial bool
	// Needs lists the labels a worker must offer to run the task, from a
	// [needs: gpu, os=linux] tag, as written.
	Needs []string
	// Budget is the raw text of a [budget: $2] tag, "" when absent.
	Budget string

	// Verification marks an item of the plan's Verification checklist: the
	// final gate, checked after every other task (see Plan.Next).
	Verification bool
}

// HasWork reports whether the task carries shell blocks that are not
// verify blocks: a runbook task, which runs without a model. A task
// without them (prose, or only verify blocks) is carried out by an agent
// with a model, and its verify blocks gate its tick.
func (t Task) HasWork() bool {
	for _, b := range t.Blocks {
		if b.IsShell() && !b.IsVerify() {
			return true
		}
	}
	return false
}

// VerifyBlocks returns the task's sh verify blocks, in order.
func (t Task) VerifyBlocks() []Block {
	var out []Block
	for _, b := range t.Blocks {
		if b.IsShell() && b.IsVerify() {
			out = append(out, b)
		}
	}
	return out
}

// IsRunbook reports whether the task carries shell blocks, which the
// runbook executor runs; a task without any needs an agent model.
func (t Task) IsRunbook() bool {
	for _, b := range t.Blocks {
		if b.IsShell() {
			return true
		}
	}
	return false
}

// FileRefs splits the task's Files field into its entries. It is worked out
// when asked for, not on every parse: only validation needs it.
func (t Task) FileRefs() []FileRef { return parseFileRefs(t.Files) }

// FileRef is one entry of a task's Files field.
type FileRef struct {
	Path string // as written, without backticks, markers or :line suffixes
	New  bool   // the task creates the file, so it need not exist yet
}

// Block is a fenced code block inside a task.
type Block struct {
	Info string   // the whole info string, trimmed
	Lang string   // its first word, "" when there is no info string
	Args []string // the remaining words
	Code string   // the content, with line endings normalised to \n
	Line int      // 1-based line of the opening fence
}

// IsShell reports whether the block is a shell script the runbook executor
// runs: its language is sh, shell or bash (case-insensitive). Other shells
// (zsh, fish) are not assumed to be installed and are left to an agent.
func (b Block) IsShell() bool {
	return b.Shell() != ""
}

// Shell returns the interpreter for a shell block: "bash" for bash, "sh" for
// sh and shell, and "" when the block is not a shell block.
func (b Block) Shell() string {
	switch strings.ToLower(b.Lang) {
	case "bash":
		return "bash"
	case "sh", "shell":
		return "sh"
	}
	return ""
}

// IsVerify reports whether "verify" is among the block's arguments, as in
// ```sh verify. Such a block checks the task after its other blocks ran.
func (b Block) IsVerify() bool {
	for _, a := range b.Args {
		if strings.EqualFold(a, "verify") {
			return true
		}
	}
	return false
}

// Key is a stable key for the task in the work state: its number when it has
// one ("3"), else its title lower-cased with runs of other characters turned
// into "-" ("add-login-page"). A title of only digits is prefixed with
// "title-" so it cannot collide with a number; an empty title gives
// "task-<position>".
func (t Task) Key() string {
	if t.Number > 0 {
		return strconv.Itoa(t.Number)
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(t.Title) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	k := b.String()
	if k == "" {
		return "task-" + strconv.Itoa(t.Index+1)
	}
	if strings.Trim(k, "0123456789") == "" {
		return "title-" + k
	}
	return k
}

// Progress counts a plan's tasks: the TODOs and the items of its
// Verification checklist, what a run executes. Objectives' checklists
// (Deliverables, Definition of Done) stay descriptive and are not counted.
type Progress struct {
	Completed, Total int
}

// Complete reports whether the plan has tasks and all of them are done.
func (p Progress) Complete() bool { return p.Total > 0 && p.Completed == p.Total }

// Progress counts the plan's done tasks.
func (p *Plan) Progress() Progress {
	pr := Progress{Total: len(p.Tasks)}
	for i := range p.Tasks {
		if p.Tasks[i].Done {
			pr.Completed++
		}
	}
	return pr
}

// Lookup finds t in p by its number and title, as a tick does; offsets may
// have moved since t was read.
func (p *Plan) Lookup(t Task) (Task, bool) {
	for i := range p.Tasks {
		// The number is compared first, in place: a run looks its task up
		// several times a task, and copying each task of a long plan to
		// compare it cost more than the comparison.
		if c := &p.Tasks[i]; c.Number == t.Number && same(*c, t) {
			return *c, true
		}
	}
	return Task{}, false
}

// Next returns the first task that is not done: the TODOs in order, then
// the items of the Verification checklist, the plan's final gate.
func (p *Plan) Next() (Task, bool) {
	return p.NextExcept(nil)
}

// NextExcept is Next passing over the tasks skip reports.
func (p *Plan) NextExcept(skip func(Task) bool) (Task, bool) {
	for _, gate := range []bool{false, true} {
		for i := range p.Tasks {
			// In place: the tasks passed over are not copied.
			if t := &p.Tasks[i]; !t.Done && t.Verification == gate && (skip == nil || !skip(*t)) {
				return *t, true
			}
		}
	}
	return Task{}, false
}

// FindTitle finds a task by its title, as people and models name one:
// the task whose title is text (case-insensitive, blanks around it
// ignored), else the only task whose title contains it. Without a single
// match it returns the tasks whose titles contain text (none, or several).
func (p *Plan) FindTitle(text string) (Task, []Task, bool) {
	want := strings.ToLower(strings.TrimSpace(text))
	var partial []Task
	for _, t := range p.Tasks {
		title := strings.ToLower(t.Title)
		if title == want {
			return t, nil, true
		}
		if want != "" && strings.Contains(title, want) {
			partial = append(partial, t)
		}
	}
	if len(partial) == 1 {
		return partial[0], nil, true
	}
	return Task{}, partial, false
}

// Ordinal is the number people and agents use for t: its own number, or,
// for an unnumbered item (a Verification checkbox), its place in the plan.
// The CLI, plan_check, the run's events and the listings all use it, so one
// number names one task everywhere.
func (t Task) Ordinal() int {
	if t.Number > 0 {
		return t.Number
	}
	return t.Index + 1
}

// ByOrdinal finds the task whose Ordinal is n.
func (p *Plan) ByOrdinal(n int) (Task, bool) {
	for _, t := range p.Tasks {
		if t.Ordinal() == n {
			return t, true
		}
	}
	return Task{}, false
}
