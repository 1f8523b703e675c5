// Package plans reads and edits Weave plan files and keeps the work state.
//
// A plan is a markdown file in .weave/plans/ whose top-level task-list items
// are its tasks. Parsing is a pure function over bytes that returns structs
// carrying byte offsets, so ticking a task patches one byte of the file and
// never re-renders it. The work state (.weave/state.json) records which plan
// is active and how its tasks went; it is written atomically and guarded by a
// lock so that two processes never drive one project.
package plans
