// Command weave runs markdown plans with AI coding agents: it executes a
// plan's checkbox tasks, ticks them as they are verified, and resumes where
// it stopped.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/weavehq/weave/internal/proc"
)

func main() { os.Exit(Main()) }

// Main runs the weave command line with the process's arguments and streams
// and returns its exit code. SIGINT and SIGTERM cancel the command's
// context; a running plan pauses. So does a reader of standard output or
// error that goes away (`weave start-work | head`): weave stops writing to
// it rather than dying of SIGPIPE. SIGTSTP (Ctrl-Z) stops weave with the
// commands it runs in process groups of their own; SIGCONT continues them.
func Main() int {
	// On Linux weave adopts what its children orphan, so that it can end
	// them on the way out: nothing a run starts outlives it.
	_ = proc.BecomeSubreaper()
	// No child reads weave's secrets through /proc/<pid>/environ, its
	// memory or ptrace: only root could (internal/proc's doc).
	_ = proc.Undumpable()
	defer proc.KillChildren(time.Second)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer catchBrokenPipe()()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := SystemStreams()
	// Ctrl-Z stops the blocks and bash calls a run started with weave.
	jc, stopJobs := followJobControl(s.ErrOut)
	defer stopJobs()
	ctx = withJobControl(ctx, jc)
	guardPipes(s, cancel)
	return runArgs(ctx, s, os.Args[1:])
}
