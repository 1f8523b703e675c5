package wire

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

// MaxMessage bounds one message either way, far above gRPC's default of
// 4 MiB: a model call carries the whole conversation, tool results
// included (each at most host/tools.MaxResultBytes), and one that fits the
// model's context window fits here.
const MaxMessage = 64 << 20

// DialOptions are the gRPC options either side dials the other with: the host
// its plugins (go-plugin's ClientConfig.GRPCDialOptions), a plugin the host
// services on the broker.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(windowSize),
		grpc.WithInitialConnWindowSize(windowSize),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessage), grpc.MaxCallSendMsgSize(MaxMessage)),
	}
}

// ServerOptions are DialOptions' counterparts for the servers on either
// side: a plugin's own, and the host services the host serves on the broker.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(windowSize),
		grpc.InitialConnWindowSize(windowSize),
		grpc.MaxRecvMsgSize(MaxMessage),
		grpc.MaxSendMsgSize(MaxMessage),
	}
}

// NewServer is go-plugin's server factory with ServerOptions added.
func NewServer(opts []grpc.ServerOption) *grpc.Server {
	return goplugin.DefaultGRPCServer(append(opts, ServerOptions()...))
}
