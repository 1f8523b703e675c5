// Package config loads Weave's one typed configuration from its layers:
// built-in defaults, the user file, the project file, WEAVE_* environment
// variables and command-line flags, each overriding the one before.
package config
