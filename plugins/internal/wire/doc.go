// Package wire holds what both sides of the plugin protocol share and a plugin
// author never calls: the handshake's cookie and the name a plugin is
// dispensed under, the gRPC options of every connection between a host and a
// plugin, and Shared, through which package plugins hands package pluginhost
// the code that lives in plugins but serves the host too.
//
// # Why Shared
//
// The conversions between plugins' Go types and the protocol's messages, and
// the plugin side's gRPC server, are needed by both sides. They live in
// package plugins, because its Serve runs them in every plugin binary and a
// plugin binary imports nothing else. Package pluginhost, the host's side,
// imports plugins for its types, so plugins cannot import pluginhost; and
// exporting the conversions from plugins would show them to every plugin
// author. So plugins puts one value in Shared when it is initialised, and
// pluginhost takes the conversions from it (the way google.golang.org/grpc's
// internal package carries what grpc shares with its subpackages without
// exporting it). This package cannot name plugins' types (plugins imports it),
// so Shared is an any that pluginhost asserts to the interface it declares.
//
// # Guarantees
//
//   - Shared is written once, by package plugins' init, which Go runs before
//     the initialisation of any package that imports plugins (pluginhost
//     among them); nothing writes it afterwards.
//   - Nothing here changes the wire: the cookie, the dispense name and the
//     gRPC options are what both sides have always used.
package wire
