package plugins

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
			plugin, method, st.Message(), ErrPluginUnavailable)
	case codes.Unimplemented:
		return fmt.Errorf("plugin %q does not implement %s: is it the right kind of plugin, built for protocol version %d?",
			plugin, method, ProtocolVersion)
	default:
		return fmt.Errorf("plugin %q: %s: %s", plugin, method, st.Message())
	}
}

// statusError turns an error returned by plugin code into a gRPC status, so
// that the other side sees its message and never mistakes it for a crash.
func statusError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, ErrNoModel):
		return status.Error(codes.FailedPrecondition, ErrNoModel.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

// hostError turns an error from a host-service call into a Go error for
// plugin code. ErrNoModel stays recognisable with errors.Is.
func hostError(service string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("host %s: %w", service, err)
	}
	switch {
	case st.Code() == codes.FailedPrecondition && st.Message() == ErrNoModel.Error():
		return ErrNoModel
	case st.Code() == codes.Unavailable:
		return fmt.Errorf("host %s unavailable (%s): %w", service, st.Message(), ErrPluginUnavailable)
	}
	return fmt.Errorf("host %s: %s", service, st.Message())
}
