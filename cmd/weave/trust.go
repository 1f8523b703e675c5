package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/internal/trust"
)

// The trust gate: a project's config that runs code or widens a role acts
// only once a person has trusted its exact bytes (package trust). Every
// command that acts on the config (runs hooks, plugins, a model, a bus
// server or agent_command, blocks with runbook.shell) loads it through
// g.loadConfig; only commands that show it (config show, doctor, trust)
// read it untrusted.

// loadConfig loads the layered configuration for project (which may be
// empty) once the project's config is trusted, with flags applied last.
func (g *globalOptions) loadConfig(project string, flags map[string]any) (*config.Config, *config.Sources, error) {
	snap, err := g.gateConfig(project)
	if err != nil {
		return nil, nil, err
	}
	cfg, src, err := loadConfigUntrusted(project, flags)
	if err != nil {
		return nil, nil, err
	}
	if snap != nil {
		// What was parsed must be what was trusted: a file changed between
		// the check and the load is not taken.
		again, err := trust.Take(project)
		if err != nil {
			return nil, nil, &exitError{code: exitUsage, err: err}
		}
		if !again.Same(snap) {
			return nil, nil, &exitError{code: exitUsage, err: errors.New("the project config changed while weave read it; run the command again")}
		}
		g.trusted = snap
	}
	return cfg, src, nil
}

// gateConfig returns the project's trusted config files, or an error that
// lists what is not trusted. --trust and WEAVE_TRUST=1 trust it here,
// saying so. Outside a project there is nothing to trust.
func (g *globalOptions) gateConfig(project string) (*trust.Snapshot, error) {
	if project == "" {
		return nil, nil
	}
	snap, err := trust.Take(project)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	st := trust.UserStore(nil)
	err = trust.Check(st, snap)
	var untrusted *trust.UntrustedError
	if !errors.As(err, &untrusted) {
		if err != nil {
			return nil, &exitError{code: exitUsage, err: err}
		}
		return snap, nil
	}
	how := ""
	switch {
	case g.TrustNow:
		how = "--trust"
	case os.Getenv(trust.Env) == "1":
		how = trust.Env + "=1"
	default:
		return nil, &exitError{code: exitUsage, err: err}
	}
	if err := st.Save(snap, nil); err != nil {
		return nil, &exitError{code: exitFailed, err: err}
	}
	fmt.Fprintf(g.stderr(), "trusted the project config (%s): %s\n", how, strings.Join(untrusted.Changes.Files, ", "))
	return snap, nil
}

func (g *globalOptions) stderr() io.Writer {
	if g.errOut == nil {
		return io.Discard
	}
	return g.errOut
}

// reportConfigChange says, at the end of a run, that the project config
// changed while it ran (a tool call, a person's editor): the next start
// stops at the gate.
func (g *globalOptions) reportConfigChange(project string) {
	if g.trusted == nil {
		return
	}
	now, err := trust.Take(project)
	if err == nil && now.Same(g.trusted) {
		return
	}
	fmt.Fprintf(g.stderr(), "weave: the project config changed during this run (%s); the next start stops until you run `weave trust`\n",
		strings.Join(changedFiles(g.trusted, now), ", "))
}

// changedFiles names the files that differ between two snapshots (now may
// be nil when it could not be read).
func changedFiles(before, now *trust.Snapshot) []string {
	if now == nil {
		return before.Rels()
	}
	digests := map[string]string{}
	for _, f := range before.Files {
		digests[f.Rel] = f.Digest
	}
	var out []string
	for _, f := range now.Files {
		if d, ok := digests[f.Rel]; !ok || d != f.Digest {
			out = append(out, f.Rel)
		}
		delete(digests, f.Rel)
	}
	for _, rel := range before.Rels() {
		if _, ok := digests[rel]; ok {
			out = append(out, rel)
		}
	}
	return out
}

type trustOptions struct {
	*globalOptions
	Streams *Streams
	Yes     bool
	Show    bool
	Revoke  bool
}

func newCmdTrust(g *globalOptions, s *Streams) *cobra.Command {
	opts := &trustOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "trust [--yes | --show | --revoke]",
		Short: "Trust the project's config, after seeing what changed",
		Long: `Trust the project's config so that it may act. The files that can run code
or widen a role (.weave/config.*, .mcp.json, .claude/settings.json and
.claude/settings.local.json) act only once a person has trusted their exact
bytes: a new or changed file (by you, a git pull, or an agent) stops
start-work, chat and every other command that would act on it.

weave trust lists what changed since you last trusted the project (keys
added +, changed ~ and removed -, with their current values) and asks. The
record is kept in your state directory ($XDG_STATE_HOME/weave/trust/, else
~/.local/state/weave/trust/), never in the project. Your own config
($XDG_CONFIG_HOME/weave/) needs no trust.

In a script or CI: weave trust --yes, or --trust on start-work and chat, or
WEAVE_TRUST=1 in weave's environment (never passed to a child).`,
		Example: `  weave trust
  weave trust --yes
  weave trust --show
  weave trust --revoke`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			return trustRun(opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "trust without asking (for scripts)")
	cmd.Flags().BoolVar(&opts.Show, "show", false, "only show whether the config is trusted and what changed")
	cmd.Flags().BoolVar(&opts.Revoke, "revoke", false, "forget the trust; the next start asks again")
	cmd.MarkFlagsMutuallyExclusive("yes", "show", "revoke")
	return cmd
}

func trustRun(opts *trustOptions) error {
	project, err := opts.project()
	if err != nil {
		return err
	}
	snap, err := trust.Take(project)
	if err != nil {
		return err
	}
	st := trust.UserStore(nil)
	w := opts.Streams.Out
	if opts.Revoke {
		if err := st.Revoke(snap); err != nil {
			return err
		}
		fmt.Fprintln(w, "forgot the trust in this project's config; the next start asks again")
		return nil
	}
	if len(snap.Files) == 0 {
		fmt.Fprintln(w, "this project has no config to trust (no .weave/config.*, .mcp.json or .claude/settings*.json)")
		return nil
	}
	rec, err := st.Load(snap)
	if err != nil && !opts.Yes {
		return err
	}
	changes := trust.Compare(rec, snap)
	if changes.Trusted() {
		fmt.Fprintf(w, "trusted: %s\n", strings.Join(snap.Rels(), ", "))
		return nil
	}
	if changes.New {
		fmt.Fprintln(w, "not trusted yet:")
	} else {
		fmt.Fprintln(w, "changed since you trusted it:")
	}
	changes.Write(w, "  ")
	if opts.Show {
		return &exitError{code: exitFailed}
	}
	if !opts.Yes {
		ok, err := confirm(opts.Streams, "Trust this config? It may run commands on this machine. [y/N] ")
		if err != nil {
			return err
		}
		if !ok {
			return &exitError{code: exitFailed, err: errors.New("not trusted; nothing recorded")}
		}
	}
	// What is recorded is what was shown: a file changed since is not.
	again, err := trust.Take(project)
	if err != nil {
		return err
	}
	if !again.Same(snap) {
		return &exitError{code: exitFailed, err: errors.New("the config changed while you were asked; run `weave trust` again")}
	}
	if err := st.Save(snap, nil); err != nil {
		return err
	}
	fmt.Fprintf(w, "trusted: %s\n", strings.Join(snap.Rels(), ", "))
	return nil
}

// confirm asks a yes/no question on an interactive terminal; anywhere else
// it is a usage error that names --yes.
func confirm(s *Streams, question string) (bool, error) {
	f, ok := s.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, usageErrorf("not a terminal, so nothing was asked: run `weave trust --yes` to trust this config")
	}
	fmt.Fprint(s.ErrOut, question)
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}
