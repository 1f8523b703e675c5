// Package permrule reads and matches permission rules in Claude Code's
// syntax: Bash, Bash(git status:*), Bash(git status *), Read(.env),
// Edit(src/**), WebFetch(domain:example.com), mcp__github__create_issue,
// mcp__github, mcp__github__*. A Policy holds the allow, ask and deny rules
// of every source and decides one tool call: deny first, then ask, then
// allow, then the default mode.
//
// # Guarantees
//
//   - A Policy never widens anything: it only says Denied, Asked, Allowed
//     or Pass, and the caller (the host's tool door) applies it under the
//     capability matrix, which stays the ceiling.
//   - A bash command is split on &&, ||, ;, |, & and newlines outside
//     quotes. A deny or ask rule matches when it matches any part (also
//     with leading environment assignments and wrappers such as env,
//     command, nohup stripped, and the program's directory dropped). An
//     allow rule allows a command only when every part is matched by an
//     allow rule and the command holds nothing that could run code the
//     text does not show: command or process substitution, subshells,
//     redirections other than to /dev/null or between descriptors,
//     leading environment assignments, an unterminated quote. What cannot
//     be parsed is never allowed by a rule.
//   - Path rules are gitignore-style: //abs is absolute, ~/p is under the
//     home directory, /p is relative to the project root, a pattern
//     without a slash matches at any depth under the project root, and a
//     pattern that matches a directory matches everything under it. A path
//     is matched as given and as its real path (symbolic links resolved),
//     so a link does not get around a deny or ask rule.
//   - Parse never panics on any input (a fuzz target holds it to that).
package permrule
