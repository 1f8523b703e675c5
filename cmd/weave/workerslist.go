package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/bus/workers"
)

type workersOptions struct {
	*globalOptions
	Streams *Streams
	Bus     string
	Creds   string
	JSON    bool
	now     func() time.Time
}

// newCmdWorkers lists the workers connected to a NATS bus.
func newCmdWorkers(g *globalOptions, s *Streams) *cobra.Command {
	opts := &workersOptions{globalOptions: g, Streams: s, now: time.Now}
	cmd := &cobra.Command{
		Use:   "workers --bus nats://HOST:PORT",
		Short: "List the workers connected to a NATS bus (name, labels, tasks, last heartbeat)",
		Example: `  weave workers --bus nats://coord.example:4222
  weave workers --bus nats://coord.example:4222 --creds coord.creds --json | jq '.[].name'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return workersRun(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Bus, "bus", "", "the NATS bus, nats://HOST:PORT (default: bus.url, else WEAVE_BUS_URL)")
	cmd.Flags().StringVar(&opts.Creds, "creds", "", "a NATS credentials file (default: bus.nats.creds_file)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the workers as JSON")
	return cmd
}

func workersRun(ctx context.Context, opts *workersOptions) error {
	nb, err := openWorkBus(ctx, opts.globalOptions, opts.Bus, opts.Creds, "list the workers")
	if err != nil {
		return err
	}
	defer nb.Close()
	reg, err := workers.OpenRegistry(ctx, nb.JetStream())
	if err != nil {
		return err
	}
	list, err := reg.List(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		if list == nil {
			list = []workers.Info{}
		}
		enc := json.NewEncoder(opts.Streams.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(opts.Streams.Out, "no workers connected (start one with `weave worker --bus URL`)")
		return nil
	}
	tw := tabwriter.NewWriter(opts.Streams.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tLABELS\tSLOTS\tTASKS\tLAST HEARTBEAT")
	for _, w := range list {
		tasks := "idle"
		if len(w.Tasks) > 0 {
			tasks = strings.Join(w.Tasks, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s ago\n", w.Name, orNone(w.Labels), w.Slots, tasks, opts.now().Sub(w.Heartbeat).Round(time.Second))
	}
	return tw.Flush()
}
