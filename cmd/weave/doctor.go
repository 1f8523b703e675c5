package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/bus/natsbus"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host"
	"github.com/weavehq/weave/host/busface"
	"github.com/weavehq/weave/host/mcp"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/internal/trust"
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
		Short: "Check the project: config, plugins, model provider, bus; say what to fix",
		Long: `Check what a run needs: the configuration loads, every plugin answers, the
model provider answers and serves model.name (it lists its models, which
costs no tokens; the key is never printed), and the bus
named by bus.url answers, after checking that the project's config is
trusted (weave trust); an untrusted one ends the checks there, since they
would act on it. Exits 1 when a check fails.`,
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
	cfg, src, err := loadConfigUntrusted(project, nil)
	if err != nil {
		return append(out, check{Name: "config", Detail: err.Error(), Fix: "correct the key named above; `weave config show --sources` shows where each value comes from"})
	}
	out = append(out, check{Name: "config", OK: true, Detail: fmt.Sprintf("loads (%d file(s))", len(src.Files()))})
	if err := cfg.CheckShell(); err != nil {
		out = append(out, check{Name: "shell", Detail: err.Error(), Fix: "install it, or set runbook.shell to sh or bash"})
	} else {
		out = append(out, check{Name: "shell", OK: true, Detail: "runbook.shell " + cmp.Or(cfg.Runbook.Shell, "sh") + " found"})
	}
	if project != "" {
		// The checks below start plugins and hooks and call the model with
		// this config, which only a trusted config may do.
		tc := trustCheck(g, project)
		out = append(out, tc)
		if !tc.OK {
			return out
		}
	}

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

	out = append(out, mcpChecks(ctx, g, &quiet)...)

	out = append(out, modelCheck(ctx, cfg.Model))
	out = append(out, modelEntryChecks(ctx, cfg.Models)...)
	out = append(out, sandboxCheck(ctx, cfg.Sandbox))

	if url := busface.URL(cfg, ""); url == "" {
		out = append(out, check{Name: "bus", OK: true, Detail: "embedded (no bus.url)"})
	} else if _, closeBus, err := openBusHinted(ctx, cfg, url); err != nil {
		out = append(out, check{Name: "bus", Detail: err.Error()})
	} else {
		_ = closeBus()
		out = append(out, check{Name: "bus", OK: true, Detail: natsbus.Redact(url) + " answers"})
	}
	return out
}

// modelCheck says whether the configured provider answers with the key
// given, and serves the model named: it lists the provider's models, which
// costs no tokens. The key's value is never shown.
func modelCheck(ctx context.Context, mc config.ModelConfig) check {
	if mc.Provider == "" || mc.Provider == "none" {
		return check{Name: "model", OK: true, Detail: "no provider configured: runbook tasks run, tasks without shell blocks need model.provider"}
	}
	s, err := model.FromConfig(mc, os.Getenv)
	return probeModel(ctx, "model", "model", mc, s, err)
}

// modelEntryChecks checks each entry of models as modelCheck checks the
// model section: its key variable is set, and its endpoint answers and
// serves its model.
func modelEntryChecks(ctx context.Context, entries map[string]config.ModelConfig) []check {
	var out []check
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		mc := entries[name]
		s, err := model.FromEntry(name, mc, os.Getenv)
		out = append(out, probeModel(ctx, "model "+name, "models."+name, mc, s, err))
	}
	return out
}

// probeModel is one model's check, named name, configured at key: err is
// why its settings could not be read, else it lists the models s serves.
func probeModel(ctx context.Context, name, keyName string, mc config.ModelConfig, s model.Settings, err error) check {
	if err != nil {
		c := check{Name: name, Detail: err.Error()}
		if s.KeyEnv == "" {
			s.KeyEnv = cmp.Or(mc.APIKeyEnv, model.DefaultKeyEnv(mc.Provider))
		}
		if os.Getenv(s.KeyEnv) == "" && mc.BaseURL == "" {
			c.Fix = "export " + s.KeyEnv + " in the shell that runs weave"
		}
		return c
	}
	where := cmp.Or(s.Azure.Endpoint, s.BaseURL, "the "+s.Provider+" API")
	key := "no key"
	if s.APIKey != "" {
		key = "key present in " + s.KeyEnv + " (not shown)"
	}
	// One quick try: doctor reports, it does not wait out an outage.
	s.MaxRetries = 0
	s.Timeout = doctorModelTimeout
	p, err := model.New(s)
	if err != nil {
		return check{Name: name, Detail: err.Error()}
	}
	names, err := model.Models(ctx, p)
	if err != nil {
		return check{Name: name, Detail: fmt.Sprintf("%s: %s; %v", s.Provider, key, err),
			Fix: "check " + keyName + ".base_url, the network, and the key"}
	}
	if len(names) > 0 && !slices.Contains(names, s.Name) {
		shown := names
		if len(shown) > 8 {
			shown = shown[:8]
		}
		return check{Name: name, Detail: fmt.Sprintf("%s: %s answers, but serves no model %q", s.Provider, where, s.Name),
			Fix: "set " + keyName + ".name to one it serves, e.g. " + strings.Join(shown, ", ")}
	}
	return check{Name: name, OK: true, Detail: fmt.Sprintf("%s: %s answers, %s", s.Provider, where, key)}
}

// doctorModelTimeout bounds doctor's call to the provider.
const doctorModelTimeout = 10 * time.Second

type nilWriter struct{}

func (nilWriter) Write(p []byte) (int, error) { return len(p), nil }

// mcpChecks starts each MCP server once: one check per server that does not
// start, else one saying how many do.
func mcpChecks(ctx context.Context, g *globalOptions, s *Streams) []check {
	list, err := mcpStatus(ctx, g, s, "")
	if err != nil {
		return []check{{Name: "mcp", Detail: err.Error(), Fix: "correct mcp_servers in the config or .mcp.json"}}
	}
	if len(list) == 0 {
		return nil
	}
	var out []check
	tools := 0
	for _, st := range list {
		tools += st.ToolCount
		if st.State != mcp.StateReady {
			out = append(out, check{Name: "mcp", Detail: fmt.Sprintf("%s (%s, from %s): %s", st.Name, st.Type, st.Source, st.Error),
				Fix: "fix its entry or install it; `weave mcp test " + st.Name + "` tries it alone"})
		}
	}
	if len(out) == 0 {
		out = append(out, check{Name: "mcp", OK: true, Detail: fmt.Sprintf("%d server(s) start, %d tools", len(list), tools)})
	}
	return out
}

// trustCheck says whether the project's config is trusted (WEAVE_TRUST=1
// trusts it here, as it does for every command).
func trustCheck(g *globalOptions, project string) check {
	snap, err := g.gateConfig(project)
	var untrusted *trust.UntrustedError
	switch {
	case errors.As(err, &untrusted):
		return check{Name: "trust", Detail: "not trusted: " + strings.Join(untrusted.Changes.Files, ", "),
			Fix: "review what changed and trust it: `weave trust`"}
	case err != nil:
		return check{Name: "trust", Detail: err.Error(), Fix: "`weave trust` records the trust again"}
	case len(snap.Files) == 0:
		return check{Name: "trust", OK: true, Detail: "nothing to trust (no project config)"}
	}
	return check{Name: "trust", OK: true, Detail: "trusted: " + strings.Join(snap.Rels(), ", ")}
}
