// Package supervisor runs the host's plugins (hook and agent plugins, the
// built-in ones included) as go-plugin subprocesses and owns their
// restarts: a go-plugin client cannot be started twice, so every start is
// a new process and a new client.
//
// # What the supervisor guarantees
//
//   - A plugin starts on its first call (or early, through Warm), once: calls
//     that arrive while it starts wait for that start, within their context.
//     A start is bounded by Options.StartTimeout, up to the plugin's
//     manifest, and a plugin that says it is another kind than its entry is
//     refused.
//   - A plugin that crashes fails only the calls it was serving, with an
//     error that says so; the host never dies with it. The next call starts
//     a new process after a backoff that doubles from Options.BackoffMin to
//     Options.BackoffMax. After Options.MaxRestarts restarts in a row
//     (counting starts again once a plugin has run for Options.StableAfter)
//     the plugin is disabled: its calls fail at once with an error wrapping
//     ErrDisabled, until its executable changes.
//   - A plugin gets an explicit environment (Options.Environ, narrowed by
//     the host, plus its name, the host's PID and its entry's variables),
//     never the host's own. On Linux the kernel kills it when the host dies,
//     even by SIGKILL.
//   - What a plugin writes to stderr reaches the host log under its name,
//     rate-limited, and its last lines are kept for error messages; nothing
//     it writes can make the host fail.
//   - Close is the single shutdown path: it refuses further starts and
//     stops the running plugins, the most recently started first, killing
//     outright those still running when its context ends. It may be called
//     more than once.
//
// A Supervisor is safe for concurrent use.
package supervisor
