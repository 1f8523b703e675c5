// Package sandbox runs a command in a view of the machine built with
// Linux namespaces, with nothing but the Go standard library and
// golang.org/x/sys: no tool has to be installed, and it works wherever an
// unprivileged process may create a user namespace (docs/sandbox.md says
// why this and not bubblewrap or Landlock).
//
// # How
//
// Command returns a command that re-executes a binary linking this
// package (weave itself: /proc/self/exe) as the sandbox's init, in new
// user, mount, PID, IPC and UTS namespaces (and a network namespace
// unless Spec.Network). The user namespace maps one id, the caller's own,
// so files keep their owner. The Spec reaches the init in a memory file
// (file descriptor 3), never through an environment; the init has no
// environment at all. A binary started as an init runs this package's
// init function, which never returns: it does not reach main, so the
// start costs the Go runtime and the package inits before this one.
//
// The init (pid 1 of its PID namespace) builds the view: a tmpfs root, the
// host's whole file system bound read-only under it (recursively, with
// mount_setattr: Linux 5.12 or later), a private tmpfs on /tmp and
// /dev/shm, the writable extras (Spec.Writable), the project's layers in
// order (Spec.Layers: the project writable or read-only, then the host-owned
// paths read-only again over it), a fresh /proc that shows only the
// sandbox's processes, and a loopback interface of its own. It then makes
// the view the root (pivot_root), drops every capability from every set
// (the bounding set too) and sets no_new_privs, so nothing it starts can
// remount a path writable or gain a capability, and starts the command in
// a process group of its own.
//
// # Guarantees
//
//   - Whatever the command starts ends with the init: when the init exits
//     (after the command) or is killed (weave killed outright: the
//     parent-death signal), the kernel kills every process of the PID
//     namespace, setsid ones included.
//   - SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT, SIGUSR1 and
//     SIGUSR2 sent to the init reach the command's process group.
//   - The init exits with the command's status, or 128 plus the number of
//     the signal that killed it. When it could not build the view or start
//     the command, it exits 125 or 127 and Cmd.Ready returns why.
//   - The init is not dumpable and has an empty environment: nothing in
//     the sandbox reads anything of weave's through /proc/1.
//   - A path the spec names that does not exist is left out, not made (the
//     project is never changed by building a view).
//
// # Errors
//
// Probe says why a sandbox cannot be built here (the kernel's or its
// policy's refusal of user namespaces, a kernel without mount_setattr), in
// words a person can act on. Off Linux every function reports that there
// is no sandbox.
package sandbox
