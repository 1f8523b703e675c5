package pluginhost

import (
	"fmt"
	"io"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/weavehq/weave/plugins"
	pb "github.com/weavehq/weave/plugins/internal/proto/weave/v1"
	"github.com/weavehq/weave/plugins/internal/wire"
)

// sharedParts is what this package takes from package plugins through
// wire.Shared (see package wire for why it is not an import): the
// conversions between plugins' types and the protocol's messages in the
// directions the host needs, the plugin side's gRPC services and serving a
// plugin from given arguments. Package plugins implements it with its own
// unexported functions, so each conversion is written once, in
// plugins/convert.go.
type sharedParts interface {
	// RegisterServers registers the plugin side's services for cfg on s.
	RegisterServers(cfg plugins.ServeConfig, broker *goplugin.GRPCBroker, s *grpc.Server) error
	// Serve runs a plugin with the arguments after the program name and
	// returns its exit code, as plugins.Serve does with os.Args.
	Serve(cfg plugins.ServeConfig, args []string, stdout, stderr io.Writer) int
	// StatusError turns an error from the host's code into the gRPC status
	// a plugin reads (plugins.ErrNoModel stays recognisable).
	StatusError(err error) error

	ManifestFromProto(*pb.Manifest) plugins.Manifest
	InfoFromProto(*pb.PluginInfo) plugins.Info
	EventToProto(plugins.Event) (*pb.Event, error)
	DecisionFromProto(*pb.Decision) (plugins.Decision, error)
	AgentRequestToProto(callID uint64, r plugins.AgentRequest) (*pb.AgentHandleRequest, error)
	AgentResponseFromProto(*pb.AgentResponse) plugins.AgentResponse
	ToolCallFromProto(*pb.ToolCall) (plugins.ToolCall, error)
	ToolResultToProto(*plugins.ToolResult) *pb.ToolResult
	ChatRequestFromProto(*pb.CompleteRequest) (plugins.ChatRequest, error)
	ChatResponseToProto(plugins.ChatResponse) (*pb.CompleteResponse, error)
	ProgressToProto(plugins.PlanProgress) *pb.PlanProgress
	TaskFromProto(*pb.TaskRef) *plugins.TaskRef
}

// shared is package plugins' sharedParts. Package plugins is initialised
// before this package (this package imports it), so wire.Shared is set by
// the time this runs; it is never written again.
var shared = sharedFromPlugins()

func sharedFromPlugins() sharedParts {
	s, ok := wire.Shared.(sharedParts)
	if !ok {
		// Only a change to one side of this pair and not the other gets here,
		// and every test of this package fails at once.
		panic(fmt.Sprintf("pluginhost: package plugins shares %T, which lacks a method pluginhost needs", wire.Shared))
	}
	return s
}
