// Package trust decides whether a project's config may act, as direnv's
// `allow` does for an .envrc: the project files that run code or widen a
// role (every format of .weave/config.*, .mcp.json, .claude/settings.json
// and .claude/settings.local.json; layout.TrustedFiles), and the hook
// scripts inside the project that their command hooks name, act only once
// a person has trusted their exact bytes.
//
// Guarantees:
//
//   - Fail closed. A project is trusted only when the set of those files
//     that exist, each with the sha256 of its exact bytes, equals the set
//     recorded for it; any added, changed or removed file, a file that
//     cannot be read, or a record that cannot be read is untrusted. A
//     project with none of the files needs no trust: nothing in it acts.
//   - The record lives in the user's state directory
//     ($XDG_STATE_HOME/weave/trust/, else ~/.local/state/weave/trust/), one
//     file per project named by the sha256 of its real absolute path, mode
//     0600, written atomically; never in the project, where an agent or a
//     `git pull` could write it.
//   - No secret is persisted. Besides each file's digest the record keeps,
//     per flattened key path (agents.loom.tools,
//     hooks.PreToolUse[0].hooks[0].command), a salted sha256 of its value,
//     so that a change can be listed key by key without keeping any value.
//     The values a change list shows are read from the files on disk, and
//     a value under a secret-looking name (internal/proc's IsSecret) is
//     shown as hidden.
//   - Only a person trusts: Store.Save is called by `weave trust` (after
//     showing the changes and asking, or with --yes), by --trust on a
//     command, by WEAVE_TRUST=1 in the environment of the person's own
//     shell or CI (Env; no child of weave ever gets it) and by `weave init`
//     for the files it writes.
package trust
