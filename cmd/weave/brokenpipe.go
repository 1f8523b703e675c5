package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// errOutputClosed is the cause of the command's cancellation when the
// reader of its standard output or error went away.
var errOutputClosed = errors.New("output closed")

// catchBrokenPipe turns a write to a closed pipe on standard output or
// error from a fatal SIGPIPE into an EPIPE error the write returns: without
// it the Go runtime lets SIGPIPE kill weave (exit 141) mid-run, with no
// pause recorded and the task's children left running. Signals weave
// handles are reset to their defaults in the children it starts, so a
// child still dies of its own broken pipes as usual.
func catchBrokenPipe() (stop func()) {
	// Nothing reads the channel: the EPIPE the write returns is what
	// stops weave, the signal only has to be handled rather than fatal.
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGPIPE)
	return func() { signal.Stop(c) }
}

// pipeGuard is one of weave's standard streams. The first write that finds
// its reader gone (`weave start-work | head`) cancels the command as
// Ctrl-C does: a run pauses and stops its children. From then on writes
// to it are dropped, so nothing more goes to the dead pipe.
type pipeGuard struct {
	w      io.Writer
	cancel context.CancelCauseFunc
	broken atomic.Bool
}

func (g *pipeGuard) Write(p []byte) (int, error) {
	if g.broken.Load() {
		return 0, errOutputClosed
	}
	n, err := g.w.Write(p)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		g.broken.Store(true)
		g.cancel(errOutputClosed)
	}
	return n, err
}

// guardPipes puts a pipeGuard in front of s's Out and ErrOut, each
// cancelling through cancel.
func guardPipes(s *Streams, cancel context.CancelCauseFunc) {
	s.Out = &pipeGuard{w: s.Out, cancel: cancel}
	s.ErrOut = &pipeGuard{w: s.ErrOut, cancel: cancel}
}
