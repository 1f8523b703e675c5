package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/weavehq/weave/host"
)

// askOptions say who answers the permission questions of tool calls (the
// permissions section's ask rules, a hook's "ask").
type askOptions struct {
	// Via is terminal (weave chat on a terminal), bus or none; "" picks
	// terminal in an interactive chat and none elsewhere.
	Via     string
	Timeout time.Duration
}

// The values of --ask-via.
const (
	askViaTerminal = "terminal"
	askViaBus      = "bus"
	askViaNone     = "none"
)

func addAskFlags(cmd *cobra.Command, a *askOptions) {
	cmd.Flags().StringVar(&a.Via, "ask-via", "", "who answers a tool call the permission rules ask about: terminal (the default in an interactive chat), bus (a peer answering on ask:<session>), none (the call is denied)")
	cmd.Flags().DurationVar(&a.Timeout, "ask-timeout", 2*time.Minute, "with --ask-via bus, how long a question waits for an answer before the call is denied")
}

// hostOptions are the host options that set who answers; term is the
// terminal's asker in an interactive chat (nil elsewhere).
func (a askOptions) hostOptions(term *termAsker) ([]host.Option, error) {
	switch a.Via {
	case "":
		if term != nil {
			return []host.Option{host.WithAsker(term)}, nil
		}
		return nil, nil
	case askViaTerminal:
		if term == nil {
			return nil, usageErrorf("--ask-via terminal needs weave chat on a terminal without -p; use --ask-via bus, or none")
		}
		return []host.Option{host.WithAsker(term)}, nil
	case askViaBus:
		if a.Timeout <= 0 {
			return nil, usageErrorf("--ask-timeout must be positive, got %s", a.Timeout)
		}
		return []host.Option{host.WithBusAsker(a.Timeout)}, nil
	case askViaNone:
		return nil, nil
	}
	return nil, usageErrorf("--ask-via %q: want %s, %s or %s", a.Via, askViaTerminal, askViaBus, askViaNone)
}
