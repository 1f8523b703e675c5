package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host"
)

// check is one finding of weave doctor.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Fix says what to do when the check failed.
	Fix string `json:"fix,omitempty"`
}

func newCmdDoctor(g *globalOptions, s *Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the project: config, plugins, model key, bus; say what to fix",
		Long: `Check what a run needs: the configuration loads, every plugin answers, the
model provider's key variable is set (its value is never printed), and the bus
named by bus.url answers. Exits 1 when a check fails.`,
		Example: `  weave doctor
  weave doctor --json | jq '.[] | select(.ok | not)'`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			checks := doctorChecks(c.Context(), g, s)
			failed := 0
			for _, ch := range checks {
				if !ch.OK {
					failed++
				}
			}
			if asJSON {
				if err := writeJSON(s.Out, checks); err != nil {
					return err
				}
			} else {
				pal := s.palette()
				for _, ch := range checks {
					mark := pal.ok.Render("ok  ")
					if !ch.OK {
						mark = pal.bad.Render("FAIL")
					}
					fmt.Fprintf(s.Out, "%s %-8s %s\n", mark, ch.Name, ch.Detail)
					if !ch.OK && ch.Fix != "" {
						fmt.Fprintf(s.Out, "         fix: %s\n", ch.Fix)
					}
				}
			}
			if failed > 0 {
				return &exitError{code: exitFailed, err: fmt.Errorf("%d check(s) failed", failed)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	return cmd
}

func doctorChecks(ctx context.Context, g *globalOptions, s *Streams) []check {
	var out []check
	project, err := g.project()
	if errors.Is(err, host.ErrNoProject) {
		out = append(out, check{Name: "project", Detail: err.Error(), Fix: "run `weave init` in your project"})
		project = ""
	} else if err != nil {
		return append(out, check{Name: "project", Detail: err.Error(), Fix: "pass an existing directory to --dir"})
	} else {
		out = append(out, check{Name: "project", OK: true, Detail: project})
	}
	cfg, src, err := loadConfig(project, nil)
	if err != nil {
		return append(out, check{Name: "config", Detail: err.Error(), Fix: "correct the key named above; `weave config show --sources` shows where each value comes from"})
	}
	out = append(out, check{Name: "config", OK: true, Detail: fmt.Sprintf("loads (%d file(s))", len(src.Files()))})

	quiet := *s
	quiet.ErrOut = nilWriter{}
	if ls, err := listPlugins(ctx, g, &quiet); err != nil {
		out = append(out, check{Name: "plugins", Detail: err.Error()})
	} else {
		bad := 0
		for _, l := range ls {
			if l.Status != pluginOK {
				bad++
				out = append(out, check{Name: "plugins", Detail: fmt.Sprintf("%s (%s): %s", l.Name, l.Path, l.Error), Fix: "rebuild or remove it; `weave plugins list` shows every plugin"})
			}
		}
		if bad == 0 {
			out = append(out, check{Name: "plugins", OK: true, Detail: fmt.Sprintf("%d answer", len(ls))})
		}
	}

	// disabled_hooks is checked against the hooks there are, which only
	// gathering them tells.
	if h, err := host.Open(ctx, project, cfg, host.WithHooks()); err != nil {
		out = append(out, check{Name: "hooks", Detail: err.Error(), Fix: "correct disabled_hooks (or the hook named above) in the config"})
	} else {
		_ = h.Close(context.WithoutCancel(ctx))
	}

	switch {
	case cfg.Model.Provider == "" || cfg.Model.Provider == "none":
		out = append(out, check{Name: "model", OK: true, Detail: "no provider configured: runbook tasks run, tasks without shell blocks need model.provider"})
	case cfg.Model.APIKeyEnv == "":
		out = append(out, check{Name: "model", Detail: cfg.Model.Provider + ": model.api_key_env is not set", Fix: "set model.api_key_env to the variable holding the key"})
	case os.Getenv(cfg.Model.APIKeyEnv) == "":
		out = append(out, check{Name: "model", Detail: fmt.Sprintf("%s: %s is empty or unset", cfg.Model.Provider, cfg.Model.APIKeyEnv), Fix: "export " + cfg.Model.APIKeyEnv + " in the shell that runs weave"})
	default:
		out = append(out, check{Name: "model", OK: true, Detail: fmt.Sprintf("%s: key present in %s (not shown)", cfg.Model.Provider, cfg.Model.APIKeyEnv)})
	}

	if url := host.BusURL(cfg, ""); url == "" {
		out = append(out, check{Name: "bus", OK: true, Detail: "embedded (no bus.url)"})
	} else if _, closeBus, err := openBusHinted(ctx, cfg, url); err != nil {
		out = append(out, check{Name: "bus", Detail: err.Error()})
	} else {
		_ = closeBus()
		out = append(out, check{Name: "bus", OK: true, Detail: url + " answers"})
	}
	return out
}

type nilWriter struct{}

func (nilWriter) Write(p []byte) (int, error) { return len(p), nil }
