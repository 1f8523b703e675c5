package plugins

import (
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// The connections between a host and its plugins carry small calls, one
// after another, over a local socket. Their flow-control windows are fixed
// and large, which turns off gRPC's bandwidth estimator: left on, it answers
// every message with a window update and a ping, and the ping with an ack,
// which costs each call two more writes and a wake-up on both sides.
const windowSize = 1 << 20

// DialOptions are the gRPC options a host dials its plugins with (go-plugin's
// ClientConfig.GRPCDialOptions).
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(windowSize),
		grpc.WithInitialConnWindowSize(windowSize),
	}
}

// serverOptions are DialOptions' counterparts for the servers on either
// side: a plugin's own, and the host services the host serves on the broker.
func serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(windowSize),
		grpc.InitialConnWindowSize(windowSize),
	}
}

// newServer is go-plugin's server factory with serverOptions added.
func newServer(opts []grpc.ServerOption) *grpc.Server {
	return goplugin.DefaultGRPCServer(append(opts, serverOptions()...))
}
