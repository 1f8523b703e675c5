package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"syscall"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/natsbus"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/busface"
)

// openBusHinted opens the bus at u and, when nothing answers there, says
// what to try instead of the dialer's chain of errors.
func openBusHinted(ctx context.Context, cfg *config.Config, u string) (bus.Bus, func() error, error) {
	b, closeBus, err := busface.Open(ctx, cfg, u)
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) && !isNoNATS(err) {
		return b, closeBus, err
	}
	shown := natsbus.Redact(u)
	hostport := shown
	if pu, perr := url.Parse(u); perr == nil && pu.Host != "" {
		hostport = pu.Host
	}
	switch {
	case len(u) > 7 && u[:7] == "nats://":
		return nil, nil, fmt.Errorf("no bus at %s: is nats-server running there (with -js)? check --bus, bus.url or %s", shown, busface.URLEnv)
	default:
		return nil, nil, fmt.Errorf("no bus at %s: is `weave bus serve --ws %s` running? check --bus, bus.url or %s", shown, hostport, busface.URLEnv)
	}
}

func isNoNATS(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "nats: no servers available for connection" {
			return true
		}
	}
	return false
}
