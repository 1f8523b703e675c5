//go:build linux

package pid1

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"runtime"
	"syscall"
	"unsafe"
)

// A binary started as a sandbox's init is that and nothing else: it never
// reaches main, and the packages that sort after this one are never
// initialised (grpc, protobuf, yaml), which keeps the start short.
func init() {
	if len(os.Args) > 1 && os.Args[1] == InitArg {
		os.Exit(runInit())
	}
}

// The file descriptors the init is given (Cmd.ExtraFiles).
const (
	fdSpec   = 3
	fdStatus = 4
)

// runInit is the sandbox's pid 1: it builds the view, starts the command
// with no capability and no way to gain one, passes signals on to the
// command's process group, reaps every orphan, and exits with the
// command's status. When it exits (or is killed with weave, by the
// parent-death signal), the kernel kills everything left in its PID
// namespace, setsid children included.
func runInit() int {
	// Capabilities, no_new_privs and the parent-death signal are per
	// thread: the command is started from this one, which drops them.
	runtime.LockOSThread()
	_ = prctl(prSetDumpable, 0)
	syscall.CloseOnExec(fdSpec)
	syscall.CloseOnExec(fdStatus)
	status := os.NewFile(fdStatus, "sandbox-status")
	fail := func(code int, err error) int {
		fmt.Fprint(status, err.Error())
		status.Close()
		return code
	}
	specFile := os.NewFile(fdSpec, "sandbox-spec")
	data, err := io.ReadAll(specFile)
	specFile.Close()
	var s Spec
	if err == nil {
		s, err = Decode(data)
	}
	if err != nil {
		return fail(ExitSetup, fmt.Errorf("read the spec: %w", err))
	}
	if err := build(s); err != nil {
		return fail(ExitSetup, err)
	}
	if s.Probe {
		status.Close()
		return 0
	}
	if err := dropPrivileges(); err != nil {
		return fail(ExitSetup, err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGCONT, syscall.SIGUSR1, syscall.SIGUSR2)
	pid, err := syscall.ForkExec(s.Path, s.Argv, &syscall.ProcAttr{
		Dir: s.Dir, Env: s.Env, Files: []uintptr{0, 1, 2},
		// Its own group, which the signals weave sends the init reach.
		Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return fail(ExitStart, fmt.Errorf("start %s: %w", s.Path, err))
	}
	status.Close()
	go func() {
		for sig := range sigs {
			_ = syscall.Kill(-pid, sig.(syscall.Signal))
		}
	}()
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return ExitStart
		}
		if got != pid {
			continue // an orphan, reaped
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}

// build makes the view: a tmpfs root that holds the host's file system
// read-only, private /tmp, /dev/shm and /proc, the layers of the project
// and the writable extras, and then becomes the root.
func build(s Spec) error {
	steps := []struct {
		what string
		do   func() error
	}{
		{"make the mounts private", func() error { return syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, "") }},
		{"mount the base tmpfs", func() error {
			return syscall.Mount("tmpfs", "/tmp", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0700")
		}},
		{"make the base", func() error { return errors.Join(os.Mkdir("/tmp/new", 0o700), os.Mkdir("/tmp/old", 0o700)) }},
		{"pivot to the base", func() error { return syscall.PivotRoot("/tmp", "/tmp/old") }},
		{"enter the base", func() error { return os.Chdir("/") }},
		{"bind the host's file system", func() error { return syscall.Mount("/old", "/new", "", syscall.MS_BIND|syscall.MS_REC, "") }},
		{"make it read-only", func() error { return readOnly("/new") }},
		{"mount a private /tmp", func() error {
			return syscall.Mount("tmpfs", "/new/tmp", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777")
		}},
		{"mount a private /dev/shm", func() error {
			if _, err := os.Stat("/new/dev/shm"); err != nil {
				return nil
			}
			return syscall.Mount("tmpfs", "/new/dev/shm", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777")
		}},
		{"bind the writable paths", func() error {
			for _, p := range s.Writable {
				if err := bind(path.Clean(p), true); err != nil {
					return err
				}
			}
			return nil
		}},
		{"bind the project", func() error {
			if s.Root == "" {
				return nil
			}
			for _, l := range s.Layers {
				if err := bind(path.Join(s.Root, l.Rel), l.Writable); err != nil {
					return err
				}
			}
			return nil
		}},
		{"mount a private /proc", func() error {
			return syscall.Mount("proc", "/new/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
		}},
		{"bring up the loopback interface", func() error {
			if s.Network {
				return nil
			}
			return loopbackUp()
		}},
		{"enter the view", func() error { return os.Chdir("/new") }},
		{"pivot to the view", func() error { return syscall.PivotRoot(".", ".") }},
		{"drop the base", func() error { return syscall.Unmount(".", syscall.MNT_DETACH) }},
		{"enter the root", func() error { return os.Chdir("/") }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			return fmt.Errorf("%s: %w", st.what, err)
		}
	}
	return nil
}

// readOnly makes the mount at p and every mount below it read-only.
// mount_setattr (Linux 5.12) does it in one call; there is no fallback,
// and a kernel without it has no sandbox.
func readOnly(p string) error {
	b, err := syscall.BytePtrFromString(p)
	if err != nil {
		return err
	}
	attr := mountAttr{attrSet: mountAttrRdonly}
	dirfd := atFdcwd
	_, _, errno := syscall.Syscall6(sysMountSetattr, uintptr(dirfd), uintptr(unsafe.Pointer(b)), atRecursive,
		uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	switch {
	case errno == syscall.ENOSYS:
		return fmt.Errorf("%w: the kernel lacks mount_setattr (Linux 5.12)", errno)
	case errno != 0:
		return errno
	}
	return nil
}

// bind binds the host's path p (under /old) at the same place in the view
// (under /new), writable or read-only. A p missing on the host is skipped;
// a mount point missing in the view (the view's /tmp is empty) is made.
func bind(p string, writable bool) error {
	src, dst := path.Join("/old", p), path.Join("/new", p)
	fi, err := os.Stat(src)
	if err != nil {
		return nil
	}
	if _, err := os.Lstat(dst); err != nil {
		if fi.IsDir() {
			err = os.MkdirAll(dst, 0o755)
		} else if err = os.MkdirAll(path.Dir(dst), 0o755); err == nil {
			var f *os.File
			if f, err = os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				err = f.Close()
			}
		}
		if err != nil {
			return fmt.Errorf("make a mount point for %s: %w", p, err)
		}
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", p, err)
	}
	if writable {
		// The host's own mount may be read-only; a bind keeps what it is.
		return nil
	}
	if err := readOnly(dst); err != nil {
		return fmt.Errorf("make %s read-only: %w", p, err)
	}
	return nil
}

// loopbackUp brings up lo in the sandbox's own network namespace, so that
// a command can still talk to itself.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr ifreq
	copy(ifr.name[:], "lo")
	if err := ioctl(fd, syscall.SIOCGIFFLAGS, &ifr); err != nil {
		return err
	}
	ifr.flags |= syscall.IFF_UP
	return ioctl(fd, syscall.SIOCSIFFLAGS, &ifr)
}

// dropPrivileges leaves this thread, and so the command it starts, with
// no capability in any set (the bounding one included) and no_new_privs,
// so that nothing in the sandbox can remount a path writable or gain a
// capability through a set-user-ID or file-capability binary.
func dropPrivileges() error {
	for c := 0; c < 64; c++ {
		if err := prctl(prCapbsetDrop, uintptr(c)); err != nil {
			if errors.Is(err, syscall.EINVAL) {
				break // past the kernel's last capability
			}
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := prctl(prCapAmbient, prCapAmbientClearAll); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := capHeader{version: linuxCapabilityVersion3}
	var data [2]capData
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("drop the capabilities: %w", errno)
	}
	if err := prctl(prSetNoNewPrivs, 1); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

// The kernel's interfaces the syscall package lacks (linux/prctl.h,
// linux/capability.h, linux/mount.h, net/if.h).
const (
	prSetDumpable           = 4
	prCapbsetDrop           = 24
	prSetNoNewPrivs         = 38
	prCapAmbient            = 47
	prCapAmbientClearAll    = 4
	linuxCapabilityVersion3 = 0x20080522
	sysMountSetattr         = 442 // the same number on every architecture
	atFdcwd                 = int(-100)
	atRecursive             = 0x8000
	mountAttrRdonly         = 0x1
)

type mountAttr struct{ attrSet, attrClr, propagation, usernsFd uint64 }

type capHeader struct {
	version uint32
	pid     int32
}

type capData struct{ effective, permitted, inheritable uint32 }

type ifreq struct {
	name  [syscall.IFNAMSIZ]byte
	flags uint16
	_     [22]byte
}

// prctl is prctl(2) with one argument, on this thread.
func prctl(option, arg uintptr) error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, option, arg, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

func ioctl(fd int, req uintptr, ifr *ifreq) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(ifr))); errno != 0 {
		return errno
	}
	return nil
}
