// Package hooks runs hook events through one ordered pipeline of hooks,
// whatever their transport (plugin, command or bus peer), and aggregates
// their decisions.
package hooks
