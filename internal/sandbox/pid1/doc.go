// Package pid1 is the sandbox's init: the first process of a sandbox's PID
// namespace, started by internal/sandbox as a re-execution of weave. It
// builds the view, starts the command with no capability, passes signals
// on, reaps, and exits with the command's status (internal/sandbox's doc
// states the guarantees).
//
// It is a package of its own so that it imports nothing but a few early
// standard packages (os, os/signal, syscall, strconv, strings): Go
// initialises a binary's packages in import-path order as their imports
// become ready, so a binary started as an init reaches this package's init
// function after about two dozen packages instead of the hundred and fifty
// weave links (the gRPC and protobuf ones among them), which halves the CPU
// time of a sandboxed call's start.
package pid1
