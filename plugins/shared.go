package plugins

import (
	"io"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/weavehq/weave/plugins/internal/proto/weave/v1"
	"github.com/weavehq/weave/plugins/internal/wire"
)

// shared is what this package hands package pluginhost through wire.Shared:
// the conversions, the plugin side's gRPC server and serving from given
// arguments, which both sides need but a plugin author never calls. Its
// methods are the unexported functions of this package, so the conversions
// stay in one place (convert.go) and out of the package's documentation.
type shared struct{}

func init() { wire.Shared = shared{} }

func (shared) RegisterServers(cfg ServeConfig, broker *goplugin.GRPCBroker, s *grpc.Server) error {
	return registerServers(cfg, broker, s)
}

func (shared) Serve(cfg ServeConfig, args []string, stdout, stderr io.Writer) int {
	return serve(cfg, args, stdout, stderr)
}

func (shared) StatusError(err error) error { return statusError(err) }

func (shared) ManifestFromProto(m *pb.Manifest) Manifest { return manifestFromProto(m) }

func (shared) InfoFromProto(in *pb.PluginInfo) Info { return infoFromProto(in) }

func (shared) EventToProto(ev Event) (*pb.Event, error) { return eventToProto(ev) }

func (shared) DecisionFromProto(d *pb.Decision) (Decision, error) { return decisionFromProto(d) }

func (shared) AgentRequestToProto(callID uint64, r AgentRequest) (*pb.AgentHandleRequest, error) {
	return agentRequestToProto(callID, r)
}

func (shared) AgentResponseFromProto(r *pb.AgentResponse) AgentResponse {
	return agentResponseFromProto(r)
}

func (shared) ToolCallFromProto(c *pb.ToolCall) (ToolCall, error) { return toolCallFromProto(c) }

func (shared) ToolResultToProto(r *ToolResult) *pb.ToolResult { return toolResultToProto(r) }

func (shared) ChatRequestFromProto(r *pb.CompleteRequest) (ChatRequest, error) {
	return chatRequestFromProto(r)
}

func (shared) ChatResponseToProto(r ChatResponse) (*pb.CompleteResponse, error) {
	return chatResponseToProto(r)
}

func (shared) ProgressToProto(p PlanProgress) *pb.PlanProgress { return progressToProto(p) }

func (shared) TaskFromProto(t *pb.TaskRef) *TaskRef { return taskFromProto(t) }
