// Package proc starts weave's child processes: it decides what environment
// each kind of child gets, puts a child in its own process group, stops a
// group with one kill sequence, and records groups on disk so that the next
// start can end what a killed host left behind.
//
// # Environment policy
//
// No child gets weave's own credentials: the secret WEAVE_* variables
// (WEAVE_BUS_TOKEN), the model key variable (model.api_key_env) and the
// providers' default key variables (OPENAI_API_KEY, ANTHROPIC_API_KEY).
// Children that weave or a model starts get no secret at all. A variable is
// secret when a word of its name (split at "_") is KEY, TOKEN, SECRET,
// PASSWORD, PASSWD, PASS, PWD, PASSPHRASE, CRED(S), CREDENTIAL(S), AUTH, DSN
// or COOKIE, or ends in KEY, TOKEN, SECRET or PASSWORD (APIKEY, AUTHTOKEN,
// PGPASSWORD), or when its value is a URL carrying a password
// (postgres://user:pass@host/db). PWD and OLDPWD are the working directory,
// not secrets. A WEAVE_* variable holding a URL with user info
// (WEAVE_BUS_URL=nats://token@host) reaches every child with the user info
// removed: a child may dial the bus, but only as itself. The variables
// config names for the bus's secrets (bus.nats.password_env, token_env) are
// withheld like model.api_key_env, and config refuses a name this policy
// would not judge secret. No child of any role gets WEAVE_TRUST (TrustEnv),
// which trusts a project's config for the weave a person set it for: a
// weave that a child starts asks for trust like any other. What each child
// receives:
//
//	Plugin       only PATH, HOME, USER, LOGNAME, LANG, LC_*, TMPDIR, TZ,
//	             XDG_CONFIG_HOME, XDG_DATA_HOME and the non-secret WEAVE_*
//	             variables, then what the host adds (plugin name, host PID,
//	             the entry's env).
//	CommandHook  the person's full environment, as Claude Code's hooks get
//	             it, less weave's own credentials; then CLAUDE_PROJECT_DIR
//	             and WEAVE_PROJECT_DIR.
//	Block        a runbook block: the environment less every secret (a plan
//	             may have been written by a model, Pattern).
//	BashTool     a bash tool call a model asked for: as Block, so that a
//	             model never reads a secret.
//	Git          git run by weave for its own bookkeeping: the environment
//	             less every secret and less GIT_* (a hook's GIT_DIR must not
//	             point weave's git at another repository).
//
// # The host's own environment
//
// A child's environment is not the only way to weave's secrets: on Linux
// /proc/<pid>/environ holds the environment weave started with (unsetting
// a variable later does not change it), and a process of the same user can
// read it, read weave's memory or attach to it with ptrace. So weave makes
// itself non-dumpable first thing (Undumpable, from cmd/weave's Main):
// then only root can. What each kind of child can reach of weave's
// secrets that way, on Linux:
//
//	Plugin       nothing: it knows weave's pid (WEAVE_HOST_PID, its parent)
//	             but /proc/<pid>/environ, mem and ptrace are refused.
//	CommandHook  nothing more than its own environment, which already has
//	             the person's secrets less weave's credentials.
//	Block        nothing ($PPID is weave; its environ is refused).
//	BashTool     nothing: in the sandbox (internal/sandbox) no host process
//	             is visible and $PPID is the sandbox's init, which has no
//	             environment and is not dumpable; without one, $PPID is
//	             weave and its environ is refused.
//	Git          nothing.
//
// A child that runs as root reads everything whatever weave does, and off
// Linux Undumpable does nothing (there is no /proc; a same-user process
// may still see weave's environment through the system's process
// listing). Each child is dumpable again once it execs; it has only its
// own environment to show.
//
// # Process groups and the kill sequence
//
// Blocks, bash tool calls and command hooks run in their own process group
// (on unix). Stop sends SIGTERM to the group, waits up to the grace period
// for the leader to exit, then sends SIGKILL to the group and waits for the
// leader. When the leader exits by itself, whatever it left running in its
// group is killed at once: a background child never outlives its command.
// The SIGTERM is followed by SIGCONT, so that a stopped group acts on it.
//
// # Job control
//
// The groups are not in the terminal's foreground group, so Ctrl-Z, which
// stops weave, would miss them. Set.Suspend stops every group of a set
// (SIGSTOP), and any the set starts before Set.Continue, which continues
// them (SIGCONT); cmd/weave calls them around its own stop.
//
// # Nothing outlives the run
//
// A Set tracks the groups a run started; Set.Close stops every one with the
// kill sequence and returns only when they are gone, so an interrupted run
// exits after its children, not before. On Linux each child also gets a
// parent-death signal (SIGKILL when weave dies, even by SIGKILL), and
// BecomeSubreaper makes orphaned descendants weave's own children, so that
// KillChildren can end them on the way out. A host killed outright cannot
// clean up, so a Set with a Ledger records each group in a file under
// .weave/run/; Ledger.Reap, called by the next start before it retries the
// task in flight, kills the groups whose host is gone. A group is recorded
// just after it starts, so every process a Set with a Ledger starts also
// carries the host's mark in its environment (WEAVE_PROCESS_HOST, inherited
// by its descendants): on Linux Reap also ends the marked processes of a
// dead host, which covers a host killed between a start and its record.
// On Linux a group is
// killed only after checking, by process start times, that its number was
// not reused. Off unix there are no process groups: only the direct child
// is killed.
package proc
