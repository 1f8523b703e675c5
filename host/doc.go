// Package host is the Weave process: it wires configuration, the bus, plugins
// and plans together and drives a plan's execution.
package host
