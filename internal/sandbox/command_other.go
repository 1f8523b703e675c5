//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os/exec"
)

// errUnsupported is the reason there is no sandbox off Linux.
var errUnsupported = errors.New("sandbox: weave's sandbox needs Linux (user, mount, PID and network namespaces)")

// Cmd is a command started in a sandbox; off Linux there is none.
type Cmd struct{ *exec.Cmd }

// Command reports that there is no sandbox here.
func Command(string, Spec) (*Cmd, error) { return nil, errUnsupported }

// Ready never runs: Command fails first.
func (c *Cmd) Ready() error { return errUnsupported }

// Abort has nothing to release.
func (c *Cmd) Abort() {}

// Probe reports that there is no sandbox here.
func Probe(context.Context, string) error { return errUnsupported }

// StartError returns err.
func StartError(err error) error { return err }
