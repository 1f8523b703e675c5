package pid1

import (
	"bytes"
	"errors"
	"strconv"
)

// InitArg is the first argument of a binary started as a sandbox's init.
// Any binary that links this package serves it (see init_linux.go), the
// test binaries of the packages that run bash included.
const InitArg = "__weave-sandbox-init"

// Exit codes of the init when it could not run the command; the reason
// goes to the status descriptor.
const (
	ExitSetup = 125 // the view could not be built
	ExitStart = 127 // the command could not be started
)

// Spec is what a sandbox shows and runs. It reaches the init over a file
// descriptor, never through the environment of the command.
type Spec struct {
	// Root is the real path of the project, "" for none (a probe).
	Root string
	// Layers are bound over the project in order, each from the host's
	// same path; the first is usually the project itself ("."). A layer
	// whose path does not exist is skipped.
	Layers []Layer
	// Writable are host paths (absolute) bound writable, under the
	// project's layers: sandbox.writable.
	Writable []string
	// Network keeps the host's network; otherwise the sandbox has its own,
	// with only a loopback interface.
	Network bool
	// Path is the command's executable (already looked up), Argv its
	// arguments, Env its whole environment and Dir its working directory.
	Path string
	Argv []string
	Env  []string
	Dir  string
	// Probe builds the view and exits 0 without running a command.
	Probe bool
}

// Layer is one path of the project (slash-separated, relative to Root)
// bound over what lies below it, writable or read-only.
type Layer struct {
	Rel      string
	Writable bool
}

// The spec travels as NUL-terminated fields (no field of it can hold a
// NUL: paths, arguments and environment entries cannot), which keeps the
// init free of an encoding package and so quick to start.

// Encode returns s as the init reads it.
func (s Spec) Encode() []byte {
	var b bytes.Buffer
	str := func(v string) { b.WriteString(v); b.WriteByte(0) }
	boolean := func(v bool) {
		if v {
			str("1")
		} else {
			str("0")
		}
	}
	list := func(vs []string) {
		str(strconv.Itoa(len(vs)))
		for _, v := range vs {
			str(v)
		}
	}
	str(s.Root)
	str(strconv.Itoa(len(s.Layers)))
	for _, l := range s.Layers {
		str(l.Rel)
		boolean(l.Writable)
	}
	list(s.Writable)
	boolean(s.Network)
	str(s.Path)
	list(s.Argv)
	list(s.Env)
	str(s.Dir)
	boolean(s.Probe)
	return b.Bytes()
}

var errSpec = errors.New("malformed sandbox spec")

// Decode reads a spec that Encode wrote.
func Decode(data []byte) (Spec, error) {
	var fields []string
	for _, f := range bytes.Split(data, []byte{0}) {
		fields = append(fields, string(f))
	}
	var bad bool
	next := func() string {
		if len(fields) < 2 { // the last element is what follows the final NUL
			bad = true
			return ""
		}
		v := fields[0]
		fields = fields[1:]
		return v
	}
	count := func() int {
		n, err := strconv.Atoi(next())
		if err != nil || n < 0 || n > len(fields) {
			bad = true
			return 0
		}
		return n
	}
	list := func() []string {
		n := count()
		out := make([]string, 0, n)
		for range n {
			out = append(out, next())
		}
		return out
	}
	var s Spec
	s.Root = next()
	for range count() {
		s.Layers = append(s.Layers, Layer{Rel: next(), Writable: next() == "1"})
	}
	s.Writable = list()
	s.Network = next() == "1"
	s.Path = next()
	s.Argv = list()
	s.Env = list()
	s.Dir = next()
	s.Probe = next() == "1"
	if bad || len(fields) != 1 || fields[0] != "" {
		return Spec{}, errSpec
	}
	return s, nil
}
