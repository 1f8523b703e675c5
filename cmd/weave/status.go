package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host/busface"
	"github.com/weavehq/weave/host/chat"
	"github.com/weavehq/weave/host/run"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/trust"
	"github.com/weavehq/weave/plans"
)

type statusOptions struct {
	*globalOptions
	Streams *Streams
	JSON    bool
	Watch   bool
	// Bus is where the loop state is read (ws:// or nats://).
	Bus string
}

func newCmdStatus(g *globalOptions, s *Streams, runF func(context.Context, *statusOptions) error) *cobra.Command {
	opts := &statusOptions{globalOptions: g, Streams: s}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each plan's progress and the state of the active one",
		Example: `  weave status
  weave status --watch
  weave status --json | jq -r '.plans[] | select(.active) | .name'`,
		Long: `Show each plan in .weave/plans with its progress, which plan is active, whether
it is running, paused or idle, and its last error. With --watch, redraw
whenever a plan file or the work state changes (Ctrl-C to stop).`,
		Args: argsBetween(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return statusRun(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the status as JSON")
	cmd.Flags().BoolVar(&opts.Watch, "watch", false, "redraw when a plan or the work state changes")
	cmd.Flags().StringVar(&opts.Bus, "bus", "", "read the loop state (loop:current) from this bus (default: bus.url, WEAVE_BUS_URL)")
	return cmd
}

func statusRun(ctx context.Context, opts *statusOptions) error {
	project, err := opts.project()
	if err != nil {
		return err
	}
	if !opts.Watch {
		return printStatus(ctx, opts, project)
	}
	return watchStatus(ctx, opts, project)
}

func printStatus(ctx context.Context, opts *statusOptions, project string) (err error) {
	now := time.Now()
	st, err := run.ReadStatus(ctx, project, now)
	if err != nil {
		return err
	}
	// The loop state lives on a bus shared with the run; without one there
	// is nothing to read, and an unreachable bus is a warning, not a failure.
	var info *busface.LoopInfo
	cfg, _, cerr := opts.loadConfig(project, nil)
	if cerr == nil {
		if info, err = busface.LoopStatus(ctx, cfg, opts.Bus, now); err != nil {
			fmt.Fprintf(opts.Streams.ErrOut, "warning: %v\n", err)
		}
	}
	// A broken config is shown after the status, which is still worth
	// seeing, and fails the command: a run would refuse to start.
	defer func() {
		var untrusted *trust.UntrustedError
		switch {
		case cerr == nil || err != nil:
		case errors.As(cerr, &untrusted):
			err = cerr
		default:
			err = &exitError{code: exitFailed, err: fmt.Errorf("the configuration is broken, so runs cannot start: %w", cerr)}
		}
	}()
	tokens, cost := activePlanUse(project, st)
	spending := activeSpending(project, st)
	if opts.JSON {
		enc := json.NewEncoder(opts.Streams.Out)
		// Watching prints one object per line, for jq and line readers.
		if !opts.Watch {
			enc.SetIndent("", "  ")
		}
		return enc.Encode(struct {
			run.ProjectStatus
			Loop *busface.LoopInfo `json:"loop,omitempty"`
			// Tokens is the active plan's use, its sessions' and their
			// delegations'.
			Tokens *chat.Tokens `json:"tokens,omitempty"`
			// Cost is what those tokens cost, null when a model's price is
			// unknown; Spending the budgets' record in state.json.
			Cost     *chat.Cost      `json:"cost_usd,omitempty"`
			Spending *plans.Spending `json:"spending,omitempty"`
		}{st, info, tokens, cost, spending})
	}
	writeStatus(opts.Streams, st, tokens)
	if line := moneyLine(cost, spending); line != "" {
		// Piped, standard output keeps its one line per plan; what the
		// active plan cost goes to standard error, as the loop's state does.
		if opts.Streams.Terminal {
			fmt.Fprintf(opts.Streams.Out, "    %s\n", opts.Streams.palette().dim.Render(line))
		} else {
			fmt.Fprintf(opts.Streams.ErrOut, "%s: %s\n", st.Active, line)
		}
	}
	// Piped, standard output holds only the plans' tab-separated lines;
	// the loop's state is for the person, on standard error.
	loopOut := opts.Streams.Out
	if !opts.Streams.Terminal {
		loopOut = opts.Streams.ErrOut
	}
	writeLoopInfo(loopOut, info, now)
	return nil
}

// writeStatus prints the status: on a terminal a table with progress bars,
// otherwise (piped) one tab-separated line per plan: name, completed,
// total, state, "active" or "", and the detail (in flight, paused reason or
// last error). tokens, when known, is the active plan's token use.
func writeStatus(s *Streams, st run.ProjectStatus, tokens *chat.Tokens) {
	w, pal := s.Out, s.palette()
	if st.Warning != "" {
		if s.Terminal {
			pal.warning(w, st.Warning)
		} else {
			pal.warning(s.ErrOut, st.Warning)
		}
	}
	if !s.Terminal {
		for _, p := range st.Plans {
			active := ""
			if p.Active {
				active = "active"
			}
			detail := p.Current.Text()
			if detail == "" {
				detail = runningSummary(p.Running)
			}
			if detail == "" {
				detail = p.PausedReason
			}
			if detail == "" {
				detail = p.LastError
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\n", p.Name, p.Completed, p.Total, pal.state(p.State), active, tsvField(detail))
		}
		return
	}
	if len(st.Plans) == 0 {
		fmt.Fprintln(w, "no plans in .weave/plans")
		return
	}
	nameWidth := 0
	for _, p := range st.Plans {
		nameWidth = max(nameWidth, cellWidth(p.Name))
	}
	for _, p := range st.Plans {
		mark := " "
		if p.Active {
			mark = pal.bold.Render("*")
		}
		fmt.Fprintf(w, "%s %s  %s %d/%d  %s\n", mark, padRight(p.Name, nameWidth), bar(p.Completed, p.Total), p.Completed, p.Total, pal.state(p.State))
		if p.Invalid != "" {
			fmt.Fprintf(w, "    invalid: %s\n", p.Invalid)
		}
		if p.Active && p.Current != nil {
			fmt.Fprintf(w, "    in flight: %s\n", p.Current.Text())
		}
		if p.Active {
			writeWorkers(w, p)
		}
		if p.Active && p.PausedReason != "" {
			fmt.Fprintf(w, "    %s %s\n", pal.warn.Render("paused:"), p.PausedReason)
		}
		if p.LastError != "" && p.LastError != p.PausedReason {
			fmt.Fprintf(w, "    %s %s\n", pal.bad.Render("last error:"), p.LastError)
		}
		if p.Active && tokens != nil {
			fmt.Fprintf(w, "    %s\n", pal.dim.Render(tokenLine(*tokens)))
		}
	}
}

// activePlanUse is the token use of the active plan's sessions (and
// their delegations), from their transcripts, and what it cost; nil when
// there is none.
func activePlanUse(project string, st run.ProjectStatus) (*chat.Tokens, *chat.Cost) {
	for _, p := range st.Plans {
		if p.Active && len(p.Sessions) > 0 {
			if t, c, err := chat.SessionUse(project, p.Sessions); err == nil && t.Total() > 0 {
				return &t, &c
			}
		}
	}
	return nil, nil
}

// tsvField keeps a value on its line and in its column.
func tsvField(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

// watchStatus redraws the status when anything under .weave/ that it shows
// changes. Watching the directories (not the files) sees atomic writes,
// which replace the file by rename.
func watchStatus(ctx context.Context, opts *statusOptions, project string) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch .weave: %w", err)
	}
	defer w.Close()
	for _, dir := range []string{layout.NewProject(project).Dir(), layout.NewProject(project).Plans()} {
		if err := w.Add(dir); err != nil {
			return fmt.Errorf("watch %s: %w", dir, err)
		}
	}
	draw := func() error {
		if opts.Streams.Terminal && !opts.JSON {
			fmt.Fprint(opts.Streams.Out, "\x1b[H\x1b[2J")
		}
		return printStatus(ctx, opts, project)
	}
	if err := draw(); err != nil {
		return err
	}
	// Several events arrive for one save; redraw once they settle.
	var settle <-chan time.Time
	// On a terminal the elapsed times keep ticking between changes.
	var tick <-chan time.Time
	if opts.Streams.Terminal && !opts.JSON {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			if err := draw(); err != nil {
				fmt.Fprintf(opts.Streams.ErrOut, "warning: %v\n", err)
			}
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if relevant(ev.Name) {
				settle = time.After(100 * time.Millisecond)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			fmt.Fprintf(opts.Streams.ErrOut, "warning: watching .weave: %v\n", err)
		case <-settle:
			settle = nil
			if err := draw(); err != nil {
				fmt.Fprintf(opts.Streams.ErrOut, "warning: %v\n", err)
			}
		}
	}
}

func relevant(name string) bool {
	base := filepath.Base(name)
	return base == layout.StateFile || filepath.Ext(base) == ".md"
}
