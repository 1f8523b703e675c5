package plugins

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

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
