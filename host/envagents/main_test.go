package envagents_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/hooks"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/plugins/pluginhost"
)

// TestMain lets the test binary serve the built-in plugins when the host
// re-executes it for them, as `weave __plugin` does in the real binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == pluginhost.BuiltinCommand {
		project := os.Getenv(host.ProjectEnv)
		cfg := config.Default()
		reg := pluginhost.NewRegistry()
		for _, r := range hooks.BuiltinHooks(host.BuiltinHookConfig(project, cfg)) {
			reg.RegisterHook(r.Info.Name, r.Hook)
		}
		builtins, err := host.BuiltinAgents(project, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for id, a := range builtins {
			reg.RegisterAgent(id, a)
		}
		os.Exit(pluginhost.ServeBuiltin(reg, os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}
