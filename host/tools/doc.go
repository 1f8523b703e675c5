// Package tools is the host's tool door: every tool call an agent makes,
// whether from a plugin process (plugins.Host.CallTool), a runbook block or a
// delegated agent, passes Tools.Call, and nothing else runs a tool.
//
// # What the door guarantees
//
// One call passes four phases, in order (Tools.call):
//
//  1. The capability gate (Gate): the caller's role must have the tool in its
//     row, and a delegated agent gets the intersection of the rows along its
//     chain, so the matrix is a ceiling through delegation. Delegation goes
//     only to a role's delegates, at most delegation.max_depth deep. Write
//     scopes are checked on the real path (after "..", symbolic links and
//     absolute paths are resolved). A refusal is a result the agent reads
//     (Denied, with what is allowed instead) and a tool.denied event, never a
//     Go error.
//     Then the permission rules (permissions.go, internal/permrule), which
//     never widen the row: a deny rule refuses the call before any hook
//     sees it ("denied by permission rule Bash(git push:*) (deny)").
//  2. The tool.execute.before hooks. A block is a denial named after the
//     hook; a modify changes the arguments, and the changed call passes the
//     gate again: a hook may change the arguments, not the rules.
//     A call an ask rule, the permissions' defaultMode or a hook's ask
//     wants approved then goes to the permission.request hooks, then to the
//     Asker (the person at the terminal, a bus peer); without one it is
//     denied, naming what asked ("denied: asked, no one to answer (rule
//     Bash(rm:*))"). An approval for the session covers the same command,
//     file, host or tool for the rest of that session.
//  3. The tool itself, one file per tool registering itself in init
//     (read.go, bash.go, ...); a name outside the host's table of tools
//     (plugins.Tools) panics at registration.
//  4. The tool.execute.after hooks, whose added context is appended to the
//     output after a marker; their failure never fails the call.
//
// Every path is confined to the project: a path whose real location is
// outside it is refused, reads included, and on unix a write or edit lands
// on the file the gate checked even if a directory on the way is swapped
// for a link meanwhile (confined_unix.go). A bash call runs in its own
// process group with the environment of its role (internal/proc: no secret
// of the host's), capped in output and time, and everything it started is
// killed with it on a timeout or a cancellation.
//
// Ticking a plan task has one door (tickdoor.go), which runs the task's
// verify blocks before it ticks: the plan_check tool and
// plugins.Host.TickTask (a plan_check call through the gate) pass it, and
// `weave task done` runs the same verification before Tick unless a person
// forces it. In a run, plan_check ticks only the task the run handed the
// caller (Scope.Handed), a model never ticks a runbook task, and the run
// owns its plan's checkboxes (OwnTicks): a box changed any other way, by a
// write, an edit, a bash call or an editor, is put back after the tool call
// or before the run reads progress (KeepTicks), and the call's result says
// that ticks go through plan_check. Its tasks are owned the same way: a
// task whose item is deleted, or is no longer a checkbox, is put back next
// to its neighbours and the model is told that tasks are not removed
// during a run; one that cannot be put back stops the run (a
// *plans.RemovedError names it), and the run is done only when every task
// it started with is in the plan, ticked. A task's blocks are those it had
// when the run started (AsStarted): the run hands it over with them and
// plan_check runs its verify blocks as they were, so that one weakened in
// place during the run checks nothing less, and the model is told so.
//
// At most tools.max_parallel calls of one session run at once, however
// many an agent sends (a model may ask for hundreds in one turn): the rest
// wait in the order they reached the door, first come first served, and a
// call whose context ends while it waits returns its error without
// running (parallel.go). The bound is the host's, so an agent process
// cannot lift it; a call made from inside a call of the same session (the
// verify blocks plan_check runs) is part of that call and takes no second
// slot. The agent keeps the results in the order of its calls.
//
// The files that hold the rules and the record are host-owned
// (hostowned.go, the one list): write and edit refuse them for every role,
// and refuse a write to a plan that would change a checkbox, naming the
// rule ("refused: .weave/config.yaml is host-owned (config); ...").
//
// Tools and Gate are safe for concurrent use; a Gate is immutable after
// NewGate.
//
// # The tools
//
// The tools the host executes, and their arguments. Paths are relative to
// the project root; absolute paths are accepted only when they resolve
// inside the project. Every tool refuses a path whose real location (after
// "..", symlinks and symlinked directories) is outside the project, reads
// included: an agent sees only the project.
//
//	tool        arguments                                   result
//	read        path, offset? (1-based line), limit? (lines) numbered lines ("   12\ttext"); at most
//	                                                         tools.read.max_bytes, with a note when cut
//	write       path, content                               creates parent directories; atomic replace
//	edit        path, old_string, new_string, replace_all?  exact string replacement; old_string must
//	                                                         occur once unless replace_all is true
//	bash        command, timeout? (seconds or "30s"),       runs `bash -c` (or `sh -c`) in the project in its own
//	            shell? (bash|sh), errexit? (-e, pipefail)
//	                                                         process group; output (stdout and stderr
//	                                                         together) capped at tools.bash.max_output_bytes;
//	                                                         exit code in ExitCode; killed with everything it
//	                                                         started on timeout (tools.bash.timeout, which the
//	                                                         argument can only shorten) or cancellation;
//	                                                         on Linux in a sandbox (sandbox.go,
//	                                                         internal/sandbox, docs/sandbox.md): the project
//	                                                         writable but its host-owned files (read-only
//	                                                         for roles without write and edit), the rest
//	                                                         read-only, private /tmp and /proc, no network
//	                                                         unless sandbox.network allows it; a write it
//	                                                         refused ends the result with a line
//	                                                         "read-only sandbox: ..."
//	glob        pattern (doublestar, "**" crosses dirs),    matching files, sorted, relative to the
//	            path? (directory to search from)             project, at most 1000
//	grep        pattern (RE2), path? (file or directory),   file:line:text, at most 500 matches; skips .git,
//	            glob? (file name filter, e.g. "*.go")       symlinks and binary files
//	webfetch    url                                         GET only, http and https; status, content type
//	                                                         and body, at most tools.webfetch.max_bytes;
//	                                                         tools.webfetch.timeout; off when
//	                                                         tools.webfetch.enabled is false; loopback,
//	                                                         private, link-local, metadata and other
//	                                                         non-public addresses refused at connect time
//	                                                         and on every redirect, unless
//	                                                         tools.webfetch.allow lists them
//	                                                         (webfetch_policy.go, internal/netpolicy)
//	task        agent, prompt                               the delegated agent's answer
//	todowrite   todos: [{content, status}]                  the session's checklist; status is pending,
//	                                                         in_progress or completed
//	plan_check  task (number or title), plan?               runs the task's verify blocks, then ticks it
//	                                                         in the plan (default: the active plan of
//	                                                         .weave/state.json); in a run only the task
//	                                                         handed over, never a runbook task
//
// A tool that ran and failed (missing file, bad arguments, non-zero exit,
// denial) returns a ToolResult with IsError and a message the agent can act
// on; a Go error means the call could not be made (the context ended, an
// internal failure).
package tools
