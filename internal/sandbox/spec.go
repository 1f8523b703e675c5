package sandbox

// InitArg is the first argument of a binary started as a sandbox's init.
// Any binary that links this package serves it (see the init in
// init_linux.go), the test binaries of the packages that run bash
// included.
const InitArg = "__weave-sandbox-init"

// Spec is what a sandbox shows and runs. It reaches the init over a file
// descriptor, never through the environment of the command.
type Spec struct {
	// Root is the real path of the project, "" for none (a probe).
	Root string `json:"root,omitempty"`
	// Layers are bound over the project in order, each from the host's
	// same path; the first is usually the project itself ("."). A layer
	// whose path does not exist is skipped.
	Layers []Layer `json:"layers,omitempty"`
	// Writable are host paths (absolute) bound writable, under the
	// project's layers: sandbox.writable.
	Writable []string `json:"writable,omitempty"`
	// Network keeps the host's network; otherwise the sandbox has its own,
	// with only a loopback interface.
	Network bool `json:"network,omitempty"`
	// Path is the command's executable (already looked up), Argv its
	// arguments, Env its whole environment and Dir its working directory.
	Path string   `json:"path,omitempty"`
	Argv []string `json:"argv,omitempty"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	// Probe builds the view and exits 0 without running a command.
	Probe bool `json:"probe,omitempty"`
}

// Layer is one path of the project (slash-separated, relative to Root)
// bound over what lies below it, writable or read-only.
type Layer struct {
	Rel      string `json:"rel"`
	Writable bool   `json:"writable,omitempty"`
}

// Exit codes of the init when it could not run the command; the reason
// goes to the status descriptor, which Cmd.Ready returns.
const (
	exitSetup = 125 // the view could not be built
	exitStart = 127 // the command could not be started
)
