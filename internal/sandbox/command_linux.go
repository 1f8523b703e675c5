//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Cmd is a command started in a sandbox: Cmd.Cmd runs the init, which
// builds the view and runs the command as its only child. The caller sets
// the streams, starts it (as the leader of a process group: proc.Set.Start
// keeps the namespaces asked for here), calls Ready, and waits as for any
// command. The init's exit status is the command's (128 plus the signal's
// number for a command killed by a signal).
type Cmd struct {
	*exec.Cmd
	spec    *os.File // the spec, in a memory file
	status  *os.File // read end of the status pipe
	statusW *os.File
}

// Command returns the command that runs s in a sandbox through exe, a
// binary that links this package (os.Executable of weave, or a test
// binary).
func Command(exe string, s Spec) (*Cmd, error) {
	b := s.Encode()
	fd, err := unix.MemfdCreate("weave-sandbox-spec", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: spec file: %w", err)
	}
	spec := os.NewFile(uintptr(fd), "sandbox-spec")
	if _, err := spec.Write(b); err != nil {
		spec.Close()
		return nil, fmt.Errorf("sandbox: write the spec: %w", err)
	}
	if _, err := spec.Seek(0, io.SeekStart); err != nil {
		spec.Close()
		return nil, fmt.Errorf("sandbox: write the spec: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		spec.Close()
		return nil, fmt.Errorf("sandbox: status pipe: %w", err)
	}
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS)
	if !s.Network {
		flags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{
		Cloneflags: flags,
		// The one id the sandbox knows is the caller's own: files keep
		// their owner, and the command is who it was outside.
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if uid != 0 {
		// Capabilities in the new user namespace survive the exec of the
		// init only as ambient ones when its uid is not 0; the init drops
		// them all before it starts the command.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
	}
	cmd := &exec.Cmd{
		Path: exe,
		Args: []string{"weave-sandbox", InitArg},
		// The init has no environment at all: nothing of weave's to show,
		// even to itself.
		Env:         []string{},
		ExtraFiles:  []*os.File{spec, w},
		SysProcAttr: attr,
	}
	return &Cmd{Cmd: cmd, spec: spec, status: r, statusW: w}, nil
}

// Ready is called once the command has started: it waits until the
// sandbox is built and the command runs in it, and returns why not
// otherwise (the init then exits; wait for it all the same).
func (c *Cmd) Ready() error {
	c.spec.Close()
	c.statusW.Close()
	b, err := io.ReadAll(io.LimitReader(c.status, 4096))
	c.status.Close()
	if err != nil {
		return fmt.Errorf("sandbox: read its status: %w", err)
	}
	if len(b) > 0 {
		return errors.New("sandbox: " + strings.TrimSpace(string(b)))
	}
	return nil
}

// Abort releases what Command made, for a command that did not start.
func (c *Cmd) Abort() {
	c.spec.Close()
	c.statusW.Close()
	c.status.Close()
}

// Probe builds a sandbox through exe and reports why it cannot be used
// here, nil when it can. It costs one start of exe.
func Probe(ctx context.Context, exe string) error {
	c, err := Command(exe, Spec{Probe: true})
	if err != nil {
		return err
	}
	var errOut strings.Builder
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		c.Abort()
		return startError(err)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.Process.Kill() })
	defer stop()
	rerr := c.Ready()
	werr := c.Wait()
	switch {
	case rerr != nil:
		return rerr
	case ctx.Err() != nil:
		return fmt.Errorf("sandbox: probe: %w", ctx.Err())
	case werr != nil:
		return fmt.Errorf("sandbox: probe: %v %s", werr, strings.TrimSpace(errOut.String()))
	}
	return nil
}

// startError says why the kernel would not start a sandbox.
func startError(err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sandbox: this machine does not let an unprivileged process create user namespaces (%w); see kernel.unprivileged_userns_clone, user.max_user_namespaces or an AppArmor userns restriction", err)
	}
	return fmt.Errorf("sandbox: start: %w", err)
}

// StartError is Start's error for a sandboxed command, with the reason
// the machine refused it when that is the cause.
func StartError(err error) error { return startError(err) }
