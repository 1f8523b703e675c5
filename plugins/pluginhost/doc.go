// Package pluginhost is the host's side of the plugin protocol: what a
// program that runs Weave plugins needs, and a plugin author does not. It
// holds Conn, the host's connection to one plugin process (its Hook and Agent
// clients, and the host services it serves to an agent on go-plugin's broker),
// the go-plugin wiring a host starts plugins with (Handshake, PluginSet,
// DialOptions, Dispense, EnvHostPID), and the Registry of built-in plugins
// that `weave __plugin <id>` serves (BuiltinCommand, ServeBuiltin).
//
// The name says which end it is: package plugins is the contract a plugin
// author implements and serves, pluginhost is the host that talks to it, as
// terraform-plugin-go keeps what a provider implements (tfprotov6) apart from
// the machinery that serves it (tf6server). The host's supervisor
// (host/supervisor) is the only user in a running weave; plugintest uses it
// to give a plugin author the host's view of their plugin, and cmd/weave to
// serve built-ins.
//
// # Guarantees
//
//   - The wire is package plugins' own: the conversions between plugins'
//     types and the protocol's messages are written once, in package
//     plugins, and this package uses them (through package
//     plugins/internal/wire), so the two sides cannot drift.
//   - Errors from a Conn name the plugin. An error wrapping
//     plugins.ErrPluginUnavailable means the process died or cannot be
//     reached; any other error came from the plugin's own code. A context
//     error from the caller's ctx stays one (errors.Is works).
//   - Host services are served once per plugin process, on the first
//     Agent.Handle. The plugins.Host an agent's Handle is given answers only
//     the requests made for that call: a call's capabilities never leak to
//     another, and a request for a call no longer in flight is refused.
//   - Describe checks the manifest: a known kind, this protocol version, a
//     name, and events (hook) or a role (agent).
//   - A Conn is safe for concurrent use; so is a Registry. Registering a
//     malformed or duplicate built-in ID, or a nil hook or agent, panics:
//     those are programming errors.
//   - A built-in served by ServeBuiltin takes exactly the path plugins.Serve
//     takes in a third-party plugin binary.
package pluginhost
