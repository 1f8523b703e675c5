// Command weave runs markdown plans with AI coding agents: it executes a
// plan's checkbox tasks, ticks them as they are verified, and resumes where
// it stopped.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(Main()) }

// Main runs the weave command line with the process's arguments and streams
// and returns its exit code. SIGINT and SIGTERM cancel the command's
// context; a running plan pauses.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runArgs(ctx, SystemStreams(), os.Args[1:])
}
