package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/internal/trust"
	"github.com/weavehq/weave/plugins/pluginhost"
)

// newCmdServePlugin is the hidden command the host re-executes weave with to
// serve a built-in hook or agent as a plugin, so that built-ins take exactly
// the path a third-party plugin takes.
func newCmdServePlugin(s *Streams) *cobra.Command {
	return &cobra.Command{
		Use:                pluginhost.BuiltinCommand + " ID [describe]",
		Hidden:             true,
		DisableFlagParsing: true,
		Args:               argsBetween(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			reg, err := builtinRegistry(os.Getenv(host.ProjectEnv))
			if err != nil {
				return err
			}
			if code := pluginhost.ServeBuiltin(reg, args[0], args[1:]); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
}

// builtinRegistry holds every built-in plugin, configured for project (the
// host passes its project in the environment).
func builtinRegistry(project string) (*pluginhost.Registry, error) {
	cfg, _, err := loadConfigUntrusted(project, nil)
	if err != nil {
		return nil, err
	}
	if want := os.Getenv(trust.DigestEnv); want != "" {
		// The host checked that this config was trusted when it started;
		// a config changed since (a model's bash call) is not taken.
		snap, err := trust.Take(project)
		if err != nil {
			return nil, err
		}
		if snap.Digest() != want {
			return nil, fmt.Errorf("the project config changed during this run (%s); the next start stops until you run `weave trust`", strings.Join(snap.Rels(), ", "))
		}
	}
	reg := pluginhost.NewRegistry()
	for _, r := range hooks.BuiltinHooks(host.BuiltinHookConfig(project, cfg)) {
		reg.RegisterHook(r.Info.Name, r.Hook)
	}
	builtins, err := host.BuiltinAgents(project, cfg)
	if err != nil {
		return nil, err
	}
	for id, a := range builtins {
		reg.RegisterAgent(id, a)
	}
	return reg, nil
}
