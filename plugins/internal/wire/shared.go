package wire

// Shared holds package plugins' implementation of the parts both sides share
// (the conversions, the plugin side's gRPC server, serving from given
// arguments). Package plugins sets it in its init and nothing writes it again;
// package pluginhost asserts it to the interface it declares. See the package
// documentation for why it is not an import.
var Shared any
