package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// epipeWriter is a stream whose reader has gone: every write fails with
// EPIPE, as a write to a closed pipe does once SIGPIPE is handled.
type epipeWriter struct{ writes int }

func (w *epipeWriter) Write(p []byte) (int, error) {
	w.writes++
	return 0, fmt.Errorf("write /dev/stdout: %w", syscall.EPIPE)
}

func TestPipeGuardCancelsOnceAndDropsLaterWrites(t *testing.T) {
	for _, stream := range []string{"out", "err"} {
		t.Run(stream, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			dead := &epipeWriter{}
			s := &Streams{Out: &epipeWriter{}, ErrOut: &epipeWriter{}}
			if stream == "out" {
				s.Out = dead
			} else {
				s.ErrOut = dead
			}
			guardPipes(s, cancel)
			w := s.Out
			if stream == "err" {
				w = s.ErrOut
			}
			if _, err := fmt.Fprintln(w, "first"); !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("write to the closed pipe: %v, want EPIPE", err)
			}
			if !errors.Is(context.Cause(ctx), errOutputClosed) {
				t.Fatalf("closed %s pipe: context cause %v, want %v", stream, context.Cause(ctx), errOutputClosed)
			}
			for range 3 {
				fmt.Fprintln(w, "paused: run `weave start-work` to resume")
			}
			if dead.writes != 1 {
				t.Errorf("%d writes reached the closed pipe, want 1", dead.writes)
			}
		})
	}
}
