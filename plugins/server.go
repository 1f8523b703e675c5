package plugins

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/weavehq/weave/plugins/internal/proto/weave/v1"
	"github.com/weavehq/weave/plugins/internal/wire"
)

// servedPlugin is the go-plugin Plugin a plugin binary serves: cfg on
// gRPC. The host's side of the same Plugin is package pluginhost's.
type servedPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	cfg ServeConfig
}

func (p servedPlugin) GRPCServer(broker *goplugin.GRPCBroker, s *grpc.Server) error {
	return registerServers(p.cfg, broker, s)
}

// GRPCClient is never called in a plugin binary: only the host dials.
func (servedPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("a plugin binary does not dial plugins: the host's side is package pluginhost")
}

// registerServers registers on s the plugin's services for cfg: Plugin, and
// Hook or Agent.
func registerServers(cfg ServeConfig, broker *goplugin.GRPCBroker, s *grpc.Server) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	ps := &pluginServer{broker: broker, cfg: cfg}
	pb.RegisterPluginServer(s, ps)
	if cfg.Hook != nil {
		pb.RegisterHookServer(s, &hookServer{ps: ps})
	}
	if cfg.Agent != nil {
		pb.RegisterAgentServer(s, &agentServer{ps: ps})
	}
	return nil
}

// recovered turns a panic in plugin code into an error, so that one bad call
// does not take the plugin process (and every other call in it) down.
func recovered(method string, err *error) {
	if r := recover(); r != nil {
		*err = status.Errorf(codes.Internal, "%s panicked: %v\n%s", method, r, debug.Stack())
	}
}

type pluginServer struct {
	pb.UnimplementedPluginServer
	broker *goplugin.GRPCBroker
	cfg    ServeConfig

	mu   sync.Mutex
	host *hostClients
}

func (s *pluginServer) Describe(ctx context.Context, _ *pb.DescribeRequest) (_ *pb.Manifest, err error) {
	defer recovered("Describe", &err)
	m, err := s.cfg.manifest(ctx)
	if err != nil {
		return nil, statusError(err)
	}
	return manifestToProto(m), nil
}

func (s *pluginServer) AttachHost(_ context.Context, req *pb.AttachHostRequest) (*pb.AttachHostResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host != nil {
		return &pb.AttachHostResponse{}, nil
	}
	cc, err := s.broker.DialWithOptions(req.GetBrokerId(), wire.DialOptions()...)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "dial host services (broker id %d): %v", req.GetBrokerId(), err)
	}
	s.host = &hostClients{
		tools: pb.NewToolsClient(cc),
		model: pb.NewModelClient(cc),
		plans: pb.NewPlansClient(cc),
		log:   pb.NewLogClient(cc),
	}
	return &pb.AttachHostResponse{}, nil
}

func (s *pluginServer) hostClients() *hostClients {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.host
}

type hookServer struct {
	pb.UnimplementedHookServer
	ps *pluginServer
}

// Info answers with the manifest's Info, so that its Kind is filled in.
func (s *hookServer) Info(ctx context.Context, _ *pb.InfoRequest) (_ *pb.PluginInfo, err error) {
	defer recovered("Info", &err)
	m, err := s.ps.cfg.manifest(ctx)
	if err != nil {
		return nil, statusError(err)
	}
	return infoToProto(m.Info), nil
}

func (s *hookServer) Handle(ctx context.Context, req *pb.HookHandleRequest) (_ *pb.Decision, err error) {
	defer recovered("Handle", &err)
	ev, err := eventFromProto(req.GetEvent())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	d, err := s.ps.cfg.Hook.Handle(ctx, ev)
	if err != nil {
		return nil, statusError(err)
	}
	out, err := decisionToProto(d)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return out, nil
}

type agentServer struct {
	pb.UnimplementedAgentServer
	ps *pluginServer
}

func (s *agentServer) Info(ctx context.Context, _ *pb.InfoRequest) (_ *pb.PluginInfo, err error) {
	defer recovered("Info", &err)
	m, err := s.ps.cfg.manifest(ctx)
	if err != nil {
		return nil, statusError(err)
	}
	return infoToProto(m.Info), nil
}

func (s *agentServer) Handle(ctx context.Context, req *pb.AgentHandleRequest) (_ *pb.AgentResponse, err error) {
	defer recovered("Handle", &err)
	host := &remoteHost{clients: s.ps.hostClients(), callID: req.GetCallId()}
	areq, err := agentRequestFromProto(req)
	if err != nil {
		return nil, statusError(err)
	}
	resp, err := s.ps.cfg.Agent.Handle(ctx, host, areq)
	if err != nil {
		return nil, statusError(err)
	}
	return agentResponseToProto(resp), nil
}

// hostClients are the plugin's clients of the host services.
type hostClients struct {
	tools pb.ToolsClient
	model pb.ModelClient
	plans pb.PlansClient
	log   pb.LogClient
}

// remoteHost is the Host an agent plugin gets for one Handle call.
type remoteHost struct {
	clients *hostClients
	callID  uint64
}

var errNotAttached = fmt.Errorf("host services are not attached to this plugin: %w", ErrPluginUnavailable)

func (h *remoteHost) CallTool(ctx context.Context, call ToolCall) (ToolResult, error) {
	if h.clients == nil {
		return ToolResult{}, errNotAttached
	}
	pc, err := toolCallToProto(call)
	if err != nil {
		return ToolResult{}, err
	}
	r, err := h.clients.tools.CallTool(ctx, &pb.CallToolRequest{CallId: h.callID, Call: pc})
	if err != nil {
		return ToolResult{}, hostError("Tools.CallTool "+call.Tool, err)
	}
	return *toolResultFromProto(r), nil
}

func (h *remoteHost) Log(ctx context.Context, level, msg string) error {
	if h.clients == nil {
		return errNotAttached
	}
	_, err := h.clients.log.Log(ctx, &pb.LogRequest{CallId: h.callID, Level: level, Message: msg})
	return hostError("Log", err)
}

func (h *remoteHost) Complete(ctx context.Context, req ChatRequest) (ChatResponse, error) {
	if h.clients == nil {
		return ChatResponse{}, errNotAttached
	}
	preq, err := chatRequestToProto(h.callID, req)
	if err != nil {
		return ChatResponse{}, err
	}
	r, err := h.clients.model.Complete(ctx, preq)
	if err != nil {
		return ChatResponse{}, hostError("Model.Complete", err)
	}
	return chatResponseFromProto(r)
}

func (h *remoteHost) Progress(ctx context.Context, plan string) (PlanProgress, error) {
	if h.clients == nil {
		return PlanProgress{}, errNotAttached
	}
	r, err := h.clients.plans.Progress(ctx, &pb.ProgressRequest{CallId: h.callID, Plan: plan})
	if err != nil {
		return PlanProgress{}, hostError("Plans.Progress", err)
	}
	return progressFromProto(r), nil
}

func (h *remoteHost) TickTask(ctx context.Context, plan string, task TaskRef) (PlanProgress, error) {
	if h.clients == nil {
		return PlanProgress{}, errNotAttached
	}
	r, err := h.clients.plans.TickTask(ctx, &pb.TickTaskRequest{CallId: h.callID, Plan: plan, Task: taskToProto(&task)})
	if err != nil {
		return PlanProgress{}, hostError("Plans.TickTask", err)
	}
	return progressFromProto(r), nil
}

// Interface guards.
var (
	_ goplugin.GRPCPlugin = servedPlugin{}
	_ Host                = (*remoteHost)(nil)
)
