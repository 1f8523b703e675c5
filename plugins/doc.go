// Package plugins is the contract between Weave and its plugins, and the only
// package a plugin author imports. It holds plain Go types for the two plugin
// kinds, agent and hook, and the helpers that serve them: what an author
// implements, calls and reads, and nothing else. The host's side (dispensing
// plugins, its connection to one, the host services it serves, the built-ins'
// registry) is package pluginhost; a test pins this package's exported names,
// so the contract grows only on purpose.
//
// # Writing a plugin
//
// Implement Hook (or Agent) and call Serve from main:
//
//	func main() { plugins.ServeHook(guard{}) }
//
// Build the binary and drop it in .weave/plugins/ (or
// $XDG_DATA_HOME/weave/plugins/), or list it under plugins: in
// .weave/config.yaml. Run with the single argument "describe", the binary
// prints its Manifest as JSON and exits; that is what `weave plugins list`
// shows. Test it with package plugintest, without the weave binary.
//
// An agent offers its model the host's tools from Tools (ToolDef.Spec is
// what a model reads): the same table the host's capability gate, its
// Claude Code hook mapping and its configuration read.
//
// # Protocol
//
// Plugins are subprocesses spoken to through hashicorp/go-plugin over gRPC,
// protocol version ProtocolVersion in the handshake, whose magic cookie only
// tells a plugin binary that a Weave host started it (run by hand, it
// explains itself and exits). The protocol is defined in
// internal/proto/weave/v1/weave.proto, whose header states the compatibility
// policy; the generated code is committed, so builds never need protoc.
// Every plugin serves Describe; hooks serve Info and Handle(Event) → Decision;
// agents serve Info and Handle(AgentRequest) → AgentResponse.
//
// # Guarantees
//
//   - Domain outcomes travel in responses, failures as Go errors: a hook that
//     blocks returns a Decision with Action Block; an error from Handle means
//     the hook could not answer, and the host applies the hook's failure
//     policy. A panic in a plugin's Handle or Info becomes an error for that
//     call; the plugin process keeps serving.
//   - An error wrapping ErrPluginUnavailable means the other side died or
//     cannot be reached: the host, for a plugin's Host calls; the plugin, for
//     the host's calls to it (whose errors also name the plugin). Any other
//     error came from the other side's own code.
//   - Host services (Host: tools, model, plans, log) are served once per
//     plugin process through the go-plugin broker. The Host an agent's Handle
//     receives is valid only during that call: the host routes each of its
//     requests to the Host the host passed for that call, so a call's
//     capabilities never leak to another.
//   - Calls on one plugin may run concurrently; a plugin's Hook and Agent
//     must be safe for concurrent use.
//   - Until a model is configured, Host.Complete fails with ErrNoModel
//     (errors.Is works across the process boundary).
//   - Strings that are not UTF-8 cross byte-exact in tool arguments, event
//     args and data, and decision args (a shell block with a Latin-1 byte
//     runs as written): they travel under a reserved key of the JSON object,
//     which this package adds and removes. In the plain string fields
//     (titles, prompts, outputs, reasons) such bytes become U+FFFD, since
//     gRPC sends only UTF-8 there.
//
// # Logging and output
//
// Serve points slog's default logger and the log package at stderr as JSON
// lines that the host shows in its log under the plugin's name, and keeps
// the last lines for its error messages. The host takes stderr at a bounded
// rate (64 KiB/s, in bursts of 256 KiB) and counts the lines it leaves out;
// each logged value, like a decision's reason (8 KiB), is capped. Stdout
// belongs to the protocol: anything else written there before the handshake
// makes the start fail.
//
// # Environment
//
// A plugin gets an explicit environment: PATH, HOME, USER, LOGNAME, LANG,
// LC_*, TMPDIR, TZ, XDG_CONFIG_HOME, XDG_DATA_HOME, the host's WEAVE_*
// variables that are not secret, EnvPluginName (the name the host knows it
// by), WEAVE_HOST_PID (which Serve reads to exit when its host is gone) and
// its config entry's env. API keys and other host variables are never passed
// on. A plugin dies with its host. On Linux the host is non-dumpable, so a
// plugin cannot read the host's secrets through /proc/<host pid>/environ
// either (WEAVE_HOST_PID is its parent's pid, which getppid gives anyway:
// hiding it would protect nothing).
//
// # Built-ins
//
// The built-in hooks and agents are served by the weave binary itself,
// re-executed as `weave __plugin <id>` (pluginhost.ServeBuiltin), with IDs
// registered in a pluginhost.Registry, so they take exactly the path a
// third-party plugin takes: Serve, and this package's types.
package plugins
