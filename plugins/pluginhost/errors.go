package pluginhost

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weavehq/weave/plugins"
)

// rpcError turns an error from a gRPC call to a plugin into one that names the
// plugin and says what happened. It is the only place gRPC status codes are
// read on the host side.
func rpcError(plugin, method string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("plugin %q: %s: %w", plugin, method, err)
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded:
		// gRPC's own deadline timer can fire before ctx reports it, so the
		// code, not ctx.Err(), decides which context error this is.
		ctxErr := context.Canceled
		if st.Code() == codes.DeadlineExceeded {
			ctxErr = context.DeadlineExceeded
		}
		return fmt.Errorf("plugin %q: %s: %w", plugin, method, ctxErr)
	case codes.Unavailable:
		return fmt.Errorf("plugin %q died or is unavailable during %s (%s): %w",
			plugin, method, st.Message(), plugins.ErrPluginUnavailable)
	case codes.Unimplemented:
		return fmt.Errorf("plugin %q does not implement %s: is it the right kind of plugin, built for protocol version %d?",
			plugin, method, plugins.ProtocolVersion)
	default:
		return fmt.Errorf("plugin %q: %s: %s", plugin, method, st.Message())
	}
}
