//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// followJobControl handles SIGTSTP (Ctrl-Z) until stop is called: it stops the
// process groups of the hosts registered in the returned job control, says
// so on note, stops weave, and continues the groups once weave is
// continued. A SIGCONT that finds weave stopped otherwise (SIGSTOP sent by
// someone else) continues the groups too.
//
// Weave stops itself with SIGSTOP rather than by raising SIGTSTP with its
// default action: once os/signal has handled SIGTSTP, the Go runtime keeps
// its own handler, which drops a SIGTSTP nobody is notified of. SIGSTOP
// cannot be caught; the shell reports the job as stopped all the same.
//
// note is weave's own standard error, not the guarded stream: a reader
// that went away must not turn a stop into a pause of the run, and the
// failed write is not an error worth reporting.
func followJobControl(note io.Writer) (jc *jobControl, stop func()) {
	jc = &jobControl{}
	ctx, cancel := context.WithCancel(context.Background())
	tstp := make(chan os.Signal, 1)
	cont := make(chan os.Signal, 1)
	signal.Notify(tstp, syscall.SIGTSTP)
	signal.Notify(cont, syscall.SIGCONT)
	go func() {
		defer signal.Stop(tstp)
		defer signal.Stop(cont)
		for {
			select {
			case <-ctx.Done():
				return
			case <-cont:
				jc.resume()
			case <-tstp:
				if n := jc.suspend(); n > 0 {
					what := "command"
					if n > 1 {
						what = fmt.Sprintf("%d commands", n)
					}
					_, _ = fmt.Fprintf(note, "weave: stopped with the %s it runs; `fg` continues them\n", what)
				}
				drain(cont)
				_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
				// The kill may return before every thread has stopped: the
				// groups are continued only once weave has been.
				select {
				case <-cont:
				case <-ctx.Done():
				}
				jc.resume()
			}
		}
	}()
	return jc, cancel
}

// drain empties c without blocking.
func drain(c chan os.Signal) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
