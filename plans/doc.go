// Package plans reads and edits Weave plan files and keeps the work state.
//
// A plan is a markdown file in .weave/plans/. Parsing is a pure function over
// bytes (goldmark's CommonMark block parser; the GFM task-list checkbox is
// read from the bytes that open an item) that returns structs carrying byte offsets, so ticking a task patches one
// byte of the file and never re-renders it. The work state
// (.weave/state.json) records which plan is active and how its tasks went; it
// is written atomically and guarded by a lock so that two processes never
// drive one project.
//
// Parsing takes time linear in the plan (link reference definitions are
// taken off paragraphs by the package's own transformer, goldmark's being
// quadratic), and ParseContext, LoadContext, FindContext, DiscoverContext,
// Summaries and Resolve give up once their context is done, so a signal ends
// a command reading a huge plan.
//
// # Tasks
//
// A task is a task-list item: a list item whose first line starts with a box,
// "[ ]" (open), "[x]" or "[X]" (done), in a "-", "*" or "+" bullet list or an
// ordered list ("1." or "1)"):
//
//	## TODOs
//
//	- [ ] 3. Add the callback handler [category: backend]
//	  **What**: Exchange the code for a token.
//	  **Files**: `web/callback.go` (new), `web/routes.go`
//	  **Acceptance**: a valid code signs the user in
//
//	  ```sh verify
//	  go test ./web -run Callback
//	  ```
//
// Task items count wherever they are in the document, with these exceptions:
//
//   - Checkbox items nested inside a task item belong to that task (they are
//     usually acceptance sub-items) and are not tasks of their own. Checkbox
//     items nested under a plain bullet are tasks.
//   - Anything in a fenced or indented code block or an HTML block is text,
//     never a task.
//   - Only a space, x or X between the brackets makes a box ("[\t]" does not),
//     so that ticking and unticking always give back the original bytes.
//   - A box directly followed by a colon ("- [ ]: x") is not a task: ticked,
//     it would read as a link reference definition.
//   - The TODOs rule: when the plan has a heading "TODOs" (or "TODO", any
//     level, any case, an optional trailing colon), only the task items in
//     that section (up to the next heading of the same or a higher level)
//     are tasks. Plans in the Pattern template keep checklists under
//     Objectives ("Deliverables", "Definition of Done") and Verification;
//     those are not steps to execute. A plan without a TODOs heading (a
//     runbook, a quick list) has all its task items as tasks.
//
// A task's number is the N of "N." or "N)" right after the box; a task
// without one has Number 0. The title is the rest of the box's line after the
// number, trimmed, with [key: value] tags and the bare tag [serial] removed
// ("[category: docs]"); a bracket followed by "(" or "[" is a link and
// stays. Tags fill Task.Category ([category: x]), Task.After ([after: 1, 3],
// merged with the **Depends** field), Task.Serial ([serial]), Task.Needs
// ([needs: gpu, os=linux], split on commas) and Task.Budget ([budget: $2],
// as written); other keys are dropped. Task.Key is "N" for a numbered task,
// else the title in lower case with runs of other characters turned into
// "-".
//
// # Fields
//
// Inside a task, a line that starts with a bold label followed by a colon
// ("**What**: ...", "**What:** ...", optionally after a "- " bullet) starts a
// field. The field runs over the following lines up to the next bold label or
// the end of the task; code lines are left out, and the common indentation of
// the continuation lines is removed. Recognised labels: What (or "What to
// do"), Files (or "File"), Acceptance (or "Acceptance Criteria") and Depends
// (or "Depends on", "After", "Dependencies"); other labels ("**Must NOT
// do**:") end the current field and are ignored.
//
// The Depends field lists the numbers of the tasks this one waits for:
// "1, 3", "#1 and #3", "tasks 2-4", "2 (the schema)"; "none", "-" and "N/A"
// name none. Task.After holds them with those of [after: ...] tags,
// ascending; entries that are not numbers are left out and reported by
// Validate.
//
// The Files field is split into one entry per line and per comma or
// semicolon (outside backticks). An entry's path is its first `backticked`
// span, else its first word, without a trailing ":12", ":12-40" or "#L12"
// line reference. "N/A", "none" and "-" are no entry. An entry is New (the
// task creates it, so it need not exist yet) when it carries "(new)",
// "(new file)", "(create)", "(created)", "(creates)" or "[new]" anywhere, or
// starts with "Create:", "New:" or "Add:". "Modify:", "Edit:", "Update:",
// "Change:", "Delete:", "Remove:", "Read:" and "Test:" prefixes are dropped.
//
// # Blocks
//
// Every fenced code block inside a task (nested items included) is a Block,
// in order, with its info string split on blanks and commas into Lang and
// Args. A block is a shell block when Lang is sh, shell (run with sh) or bash
// (run with bash), case-insensitively; zsh, fish and others are not assumed
// installed. A block is a verify block when "verify" is among its Args:
// ```sh verify. Code has its line endings normalised to \n.
//
// # The rest of the plan
//
// Sections are the headings at the top level of the document (not inside
// lists or quotes); Task.Section is the nearest one above the task.
// Plan.Title is the first level-1 heading. Plan.Effort is the value after the
// first "**Estimated Effort**:" label outside tasks and code, usually in the
// TL;DR quote. A UTF-8 byte-order mark is skipped; CRLF line endings,
// tabs, trailing spaces and any Unicode are read as they are, and offsets
// always refer to the file's bytes.
//
// # Validation
//
// Validate reports errors, which block a start, and warnings, which are
// shown. Errors: the plan's path is outside .weave/plans/ (a symlink leading
// out counts), the file does not exist, the plan has no task, a task number
// is used twice; and of dependencies: an entry that is not a task number, a
// number no task has (or only an unnumbered item's place) or that two tasks
// have, a task depending on itself, a TODO depending on an item of the
// Verification checklist, and tasks that wait for each other in a cycle
// (named: "tasks 2 → 4 → 2 form a cycle"). A Verification item may depend
// on tasks. Warnings: a missing TL;DR, Context, Objectives, TODOs or
// Verification section (headings of any level); in a plan with a TODOs
// section, a task without **What** or **Acceptance** (**Files** may be
// omitted, as the Pattern template says for verification-only tasks); a
// Files entry that is absolute, leads out of the project or does not exist
// (unless New; globs are not checked); task numbers that do not start at 1 or
// that skip; a missing **Estimated Effort** or one whose first word is not
// one of Quick, Short, Medium, Large, XL or Small (also Trivial, Tiny, S, M,
// L, XXL), case-insensitive.
//
// # Scheduling
//
// Plan.Ready returns the open tasks that may start now beside the running
// ones, and Plan.Waits what one task still waits for. A task with After
// waits for those tasks to be done (never, when one is skipped). Without
// any After in the plan and without ScheduleOptions.InferDeps, the order is
// the document's, one task at a time: Ready returns what NextExcept
// returns. In a plan with After, a task without it is independent. With
// InferDeps a task without After waits for the earlier open tasks whose
// Files overlap its own (the same path, or a folder above it; a glob counts
// as its folder), and a task without Files waits for every earlier one.
// Verification items wait for every TODO the run does not skip. A Serial
// task starts only when nothing runs, and nothing starts beside it.
//
// # Ticking
//
// SetDone changes exactly one byte of the file, the one between the task's
// brackets (" " or "x"; an "X" that is already done stays), and writes the
// file atomically through internal/atomicfile (temp file in the same
// directory, fsync, rename, fsync the directory), keeping its permissions.
// A reader sees the old file or the new one, never a mix, and a crash leaves
// one of the two. If the file changed since the task was parsed, the task is
// found again by number and title; if it is gone, SetDone returns a
// *TaskGoneError and writes nothing. SetDone refuses symlinks rather than
// replace them with a file.
//
// # Work state
//
// state.json holds one State:
//
//	schema_version  1; a file without it is read as version 1; a higher
//	                version is refused (upgrade weave), never overwritten
//	active_plan     absolute path of the plan being worked on
//	started_at      when the plan was started
//	session_ids     the sessions that worked on it
//	plan_name       its name (file name without .md)
//	agent           the agent driving it ("tapestry")
//	start_sha       git HEAD when it started, omitted outside a repository
//	paused          true after Ctrl-C, a user message or repeated failure
//	paused_reason   why
//	in_flight       the task being worked on {key, number, title,
//	                started_at}; after a crash it is retried
//	tasks           per Task.Key: {attempts, last_error, updated_at, done}
//	last_error      the last failure, for status output
//	continuation    the work-continuation bookkeeping {nudges, completed,
//	                stopped}: nudges sent since the plan last made progress
//	                (completed tasks then); stopped says why continuation
//	                is off (a person's message); a start clears stopped
//	updated_at      set by every Save
//
// Store.Save writes the file atomically like SetDone. Store.Load never fails
// on bad content: a file that is not valid JSON, is null, or has no
// active_plan is renamed to state.json.corrupt-<UTC time> (never
// overwriting an earlier one) and Load returns no state and a warning; the
// checkboxes in the plan remain the truth for progress. Unknown fields are
// ignored.
//
// Store.Lock takes an flock on .weave/weave.lock without waiting and writes
// the holder's PID into it; a second process gets a *LockedError with that
// PID. The kernel drops the lock when the holder exits, even by SIGKILL, so a
// lock is never stale. The lock guards state.json and the plan files against
// two weave processes; it does not stop an editor from changing a plan,
// which is why SetDone re-reads the file and finds the task again.
package plans
