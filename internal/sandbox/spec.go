package sandbox

import "github.com/weavehq/weave/internal/sandbox/pid1"

// InitArg is the first argument of a binary started as a sandbox's init.
// Any binary that links this package serves it, the test binaries of the
// packages that run bash included (internal/sandbox/pid1).
const InitArg = pid1.InitArg

// Spec is what a sandbox shows and runs (see pid1.Spec).
type Spec = pid1.Spec

// Layer is one path of the project bound writable or read-only (see
// pid1.Layer).
type Layer = pid1.Layer

// SelfExe is the running binary, as a sandbox's init is started from it:
// the file it was started from, even if that was replaced since.
const SelfExe = "/proc/self/exe"
