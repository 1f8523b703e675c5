package main

import (
	"errors"
	"fmt"
)

// Exit codes of weave.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	exitPaused = 3
)

// exitError ends a command with a code. A nil err ends it quietly: the
// command has already said what happened.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode maps an error to weave's exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailed
}
