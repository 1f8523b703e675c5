// Package config loads Weave's one typed configuration from its layers,
// each overriding the one before:
//
//  1. built-in defaults (Keys lists every key, its default and its doc line);
//  2. the user file, $XDG_CONFIG_HOME/weave/config.yaml (else ~/.config/weave/);
//  3. the project file, <project>/.weave/config.yaml;
//  4. WEAVE_* environment variables (log.level -> WEAVE_LOG_LEVEL);
//  5. command-line flags, passed in by key.
//
// A config directory holds one of config.yaml, config.yml, config.json or
// config.toml; the extension picks the format, and two of them at once is an
// error. Each value is validated where it was written, so an error names the
// file (or variable, or flag), the key, and what is allowed; unknown keys are
// errors with a "did you mean". Durations are Go duration strings.
//
// Scalar keys merge through a fresh viper instance per Load. The sections
// keyed by user-chosen names merge here, keeping the case of their names:
// agents and categories field by field, hooks (Claude Code's settings shape)
// by adding the entries of every layer, plugins by name. Those sections are
// set only in files, never from the environment or flags.
//
// Sources tells where each effective value came from; Render prints the
// effective config with or without those sources; DefaultYAML is the
// commented file `weave init` writes; Watch reloads on file changes.
//
// Nothing here keeps global state: every call works from its Options.
package config
