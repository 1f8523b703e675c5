// Package plugins is the contract between Weave and its plugins, and the only
// package a plugin author imports. It holds plain Go types for the two plugin
// kinds, agent and hook, and the helpers that serve them.
package plugins
