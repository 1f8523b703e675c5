// Package hooks runs hook events through one ordered pipeline of hooks,
// whatever their transport (plugin, command or bus peer), and aggregates
// their decisions.
//
// # Usage
//
// The host collects hooks as [Registered] values (built-ins from
// [BuiltinHooks], command hooks from [CommandHooks], plugin and bus hooks
// from their transports), builds one [Pipeline] with [NewPipeline], and calls
// [Pipeline.Run] for every event. The [Outcome] says whether the event may
// proceed, with which arguments or text, what context to add, and what each
// hook did. [RunOne] and [LoadEventFile] back `weave hooks test`; [List]
// backs `weave hooks list`.
//
// # Events and transports
//
// The events are those of package plugins: session.start, chat.message,
// command.execute.before, tool.execute.before, tool.execute.after,
// session.idle, session.compacting, session.compacted, plan.task.done,
// plan.todos.done and session.end. A hook receives only the events in its Info.Events.
//
//   - Plugin hooks (go-plugin, and the built-ins served the same way) may
//     subscribe to every event.
//   - Command hooks see the seven events Claude Code has: PreToolUse
//     (tool.execute.before), PostToolUse (tool.execute.after),
//     UserPromptSubmit (chat.message), Stop (session.idle), SessionStart
//     (session.start), SessionEnd (session.end) and PreCompact
//     (session.compacting). command.execute.before, session.compacted,
//     plan.task.done and plan.todos.done have no Claude counterpart and
//     never reach them.
//   - Bus peers see every event, as a hook subscribed to it.
//
// # Ordering
//
// Hooks on an event run one after another, never concurrently, ordered by
// Info.Priority (lower first), then by Info.Name (byte order). The order
// does not depend on registration order or transport. Built-in guards use
// priority 1000 so that they run after every hook that might rewrite the
// arguments: a guard always judges the final call. Other built-ins use 100;
// command hooks default to 0.
//
// # Aggregation
//
//   - Block beats allow. The first hook that blocks ends the walk: later
//     hooks are not called (a blocked call should not trigger their side
//     effects) and are reported as skipped. The outcome's reason is the
//     blocking hook's, prefixed with its name.
//   - Modifications apply in order: each hook sees the arguments (or
//     message text) as the hooks before it left them. Modify replaces
//     Args (tool.execute.before, and the resolved parameters on
//     command.execute.before) or Text (chat.message). A modify with
//     neither is an allow, noted in the report.
//   - Context strings are collected from every hook that ran, the blocking
//     one included, in run order.
//   - The outcome's Action is Block if any hook blocked, else Modify if any
//     hook modified, else Allow.
//
// On session.idle, Context means "re-prompt the agent with this" and Block
// means "do not continue; pause the active plan, for the reason given".
//
// # Timeouts and failures
//
// Every call has a timeout: Registered.Timeout, else Options.DefaultTimeout,
// else [DefaultTimeout]. A hook that times out, returns an error, panics or
// answers an unknown action has failed; a Go error is never a decision. The
// failure is reported (Report.Error, TimedOut, Panicked, Policy), logged,
// and resolved by the hook's failure policy:
//
//   - closed: the event is blocked, with a reason naming the hook and the
//     failure;
//   - open: the hook counts as allowing.
//
// The default policy is closed on tool.execute.before and open elsewhere;
// the built-in guards and start-work are closed on every event, command
// hooks are open unless configured otherwise (as in Claude Code). A hook
// that ignores its context is abandoned at its deadline; the pipeline does
// not wait for it. If the caller's context ends, Run returns its error and a
// blocking outcome, so a guard never fails open by accident.
//
// A Pipeline is safe for concurrent use; hooks must be too, and must not
// mutate the Event they are given (each gets its own copy of Args).
//
// # Command hooks
//
// A [CommandSpec] is a Claude Code hook: the command runs with `sh -c` in the
// project directory, with CLAUDE_PROJECT_DIR and WEAVE_PROJECT_DIR set, and
// gets Claude's JSON on stdin (session_id, transcript_path, cwd,
// hook_event_name, and per event tool_name, tool_input, tool_use_id,
// tool_response, prompt, stop_hook_active, source, reason, trigger).
// Tool names are Claude's (Bash, Read, Write, Edit, Glob, Grep, WebFetch,
// Task, TodoWrite); in tool_input a file path is file_path (absolute) and a
// delegation target subagent_type, other arguments keep their names. The
// matcher is a regular expression on the whole Claude tool name.
//
//   - Exit 0: allow, honouring JSON on stdout: "continue": false blocks with
//     stopReason; "decision": "block" blocks with reason;
//     hookSpecificOutput.permissionDecision "deny" blocks with
//     permissionDecisionReason; "ask" blocks with "needs approval: ..."
//     because Weave runs unattended and nobody can answer; "allow" and
//     "defer" allow; hookSpecificOutput.additionalContext is added context;
//     updatedInput (in hookSpecificOutput or at the top level) modifies the
//     tool arguments, merged over the current ones. Plain text on stdout is
//     context for UserPromptSubmit and SessionStart, as in Claude Code, and
//     ignored with a note elsewhere; unreadable JSON is ignored with a note.
//   - Exit 2: block, with stderr as the reason.
//   - Any other exit: a failure, by the hook's policy (open by default).
//
// As in Claude Code, a block from a Stop hook means "keep working": it
// becomes context on session.idle, not a block. Blocks from SessionStart and
// SessionEnd hooks stop nothing and are ignored. A timeout kills the whole
// process group of the command.
//
// # Conventions
//
// Tool arguments use the names path, content, command, old_string,
// new_string, pattern, url, prompt and agent. Event.Data carries
// tokens_used and context_window (token use), interrupted (session.idle
// after Ctrl-C), source ("continuation" on a chat.message the host sent
// itself, which is not a user message), and the Claude fields
// transcript_path, tool_use_id, stop_hook_active, source, reason and
// trigger when known.
//
// # Built-in hooks
//
//   - weave.start-work resolves the plan of `start-work [name]`.
//   - weave.work-continuation re-prompts the plan's owner on idle, bounded
//     (in start-work runs; elsewhere opt-in, work_continuation.enabled).
//   - weave.pattern-md-only keeps Pattern to .md files under .weave/.
//   - weave.keyword-detector turns "ultrawork"/"ulw" into an instruction.
//   - weave.context-window-monitor warns on token use and, at the ratio
//     where the host compacts, tells the agent so.
//   - weave.rules-injector adds a subfolder's AGENTS.md (else CLAUDE.md) after a
//     read, write or edit under it, once per session (the root's is in the
//     system prompt).
//   - weave.write-existing-file-guard requires reading before overwriting.
//   - weave.verification-reminder points at the Verification section when
//     a plan completes.
package hooks
