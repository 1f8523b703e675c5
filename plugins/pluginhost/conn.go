package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weavehq/weave/plugins"
	pb "github.com/weavehq/weave/plugins/internal/proto/weave/v1"
	"github.com/weavehq/weave/plugins/internal/wire"
)

// Conn is the host's connection to one running plugin process. It is safe
// for concurrent use. Errors from its calls name the plugin; an error that
// wraps plugins.ErrPluginUnavailable means the process died or cannot be
// reached.
type Conn struct {
	name   string
	broker *goplugin.GRPCBroker
	plugin pb.PluginClient
	hook   pb.HookClient
	agent  pb.AgentClient

	attachMu sync.Mutex
	attached bool

	nextCall atomic.Uint64
	callsMu  sync.Mutex
	calls    map[uint64]plugins.Host
}

func newConn(name string, broker *goplugin.GRPCBroker, cc *grpc.ClientConn) *Conn {
	return &Conn{
		name:   name,
		broker: broker,
		plugin: pb.NewPluginClient(cc),
		hook:   pb.NewHookClient(cc),
		agent:  pb.NewAgentClient(cc),
		calls:  make(map[uint64]plugins.Host),
	}
}

// Name is the name the host knows the plugin by.
func (c *Conn) Name() string { return c.name }

// Describe asks the plugin for its manifest and checks that it is usable:
// a known kind and this protocol version.
func (c *Conn) Describe(ctx context.Context) (plugins.Manifest, error) {
	r, err := c.plugin.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return plugins.Manifest{}, rpcError(c.name, "Describe", err)
	}
	m := shared.ManifestFromProto(r)
	if err := checkManifest(m); err != nil {
		return plugins.Manifest{}, fmt.Errorf("plugin %q: %w", c.name, err)
	}
	return m, nil
}

// Hook returns the plugin as a plugins.Hook. Calls fail if it is not a hook
// plugin.
func (c *Conn) Hook() plugins.Hook { return hookClient{c} }

// Agent returns the plugin as a plugins.Agent. Calls fail if it is not an
// agent plugin. The plugins.Host given to each Handle call serves the
// host-service calls the plugin makes while handling it; a nil Host answers
// them with an error.
func (c *Conn) Agent() plugins.Agent { return agentClient{c} }

type hookClient struct{ c *Conn }

func (h hookClient) Info(ctx context.Context) (plugins.Info, error) {
	r, err := h.c.hook.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return plugins.Info{}, rpcError(h.c.name, "Hook.Info", err)
	}
	return shared.InfoFromProto(r), nil
}

func (h hookClient) Handle(ctx context.Context, ev plugins.Event) (plugins.Decision, error) {
	pev, err := shared.EventToProto(ev)
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("plugin %q: %w", h.c.name, err)
	}
	r, err := h.c.hook.Handle(ctx, &pb.HookHandleRequest{Event: pev})
	if err != nil {
		return plugins.Decision{}, rpcError(h.c.name, "Hook.Handle "+ev.Name, err)
	}
	d, err := shared.DecisionFromProto(r)
	if err != nil {
		return plugins.Decision{}, fmt.Errorf("plugin %q answered %s with a bad decision: %w", h.c.name, ev.Name, err)
	}
	return d, nil
}

type agentClient struct{ c *Conn }

func (a agentClient) Info(ctx context.Context) (plugins.Info, error) {
	r, err := a.c.agent.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return plugins.Info{}, rpcError(a.c.name, "Agent.Info", err)
	}
	return shared.InfoFromProto(r), nil
}

func (a agentClient) Handle(ctx context.Context, host plugins.Host, req plugins.AgentRequest) (plugins.AgentResponse, error) {
	if err := a.c.attachHost(ctx); err != nil {
		return plugins.AgentResponse{}, err
	}
	id := a.c.nextCall.Add(1)
	a.c.callsMu.Lock()
	a.c.calls[id] = host
	a.c.callsMu.Unlock()
	defer func() {
		a.c.callsMu.Lock()
		delete(a.c.calls, id)
		a.c.callsMu.Unlock()
	}()
	preq, err := shared.AgentRequestToProto(id, req)
	if err != nil {
		return plugins.AgentResponse{}, fmt.Errorf("%s: Agent.Handle: %w", a.c.name, err)
	}
	r, err := a.c.agent.Handle(ctx, preq)
	if err != nil {
		return plugins.AgentResponse{}, rpcError(a.c.name, "Agent.Handle", err)
	}
	return shared.AgentResponseFromProto(r), nil
}

// attachHost serves the host services on the broker, once per plugin
// process, and tells the plugin where to find them.
func (c *Conn) attachHost(ctx context.Context) error {
	c.attachMu.Lock()
	defer c.attachMu.Unlock()
	if c.attached {
		return nil
	}
	id := c.broker.NextId()
	srv := &hostServer{c: c}
	go c.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(append(opts, wire.ServerOptions()...)...)
		pb.RegisterToolsServer(s, srv)
		pb.RegisterModelServer(s, srv)
		pb.RegisterPlansServer(s, srv)
		pb.RegisterLogServer(s, srv)
		return s
	})
	if _, err := c.plugin.AttachHost(ctx, &pb.AttachHostRequest{BrokerId: id}); err != nil {
		return rpcError(c.name, "AttachHost", err)
	}
	c.attached = true
	return nil
}

func (c *Conn) hostFor(callID uint64) (plugins.Host, error) {
	c.callsMu.Lock()
	h, ok := c.calls[callID]
	c.callsMu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition,
			"call %d is not in flight: host services are only served while the host waits on Agent.Handle", callID)
	}
	if h == nil {
		return nil, status.Error(codes.FailedPrecondition, "the host gave this call no host services")
	}
	return h, nil
}

// hostServer serves the host services for one plugin process, routing each
// request to the Host of the Agent.Handle call it belongs to.
type hostServer struct {
	pb.UnimplementedToolsServer
	pb.UnimplementedModelServer
	pb.UnimplementedPlansServer
	pb.UnimplementedLogServer
	c *Conn
}

func (s *hostServer) CallTool(ctx context.Context, req *pb.CallToolRequest) (*pb.ToolResult, error) {
	h, err := s.c.hostFor(req.GetCallId())
	if err != nil {
		return nil, err
	}
	call, err := shared.ToolCallFromProto(req.GetCall())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	r, err := h.CallTool(ctx, call)
	if err != nil {
		return nil, shared.StatusError(err)
	}
	return shared.ToolResultToProto(&r), nil
}

func (s *hostServer) Complete(ctx context.Context, req *pb.CompleteRequest) (*pb.CompleteResponse, error) {
	h, err := s.c.hostFor(req.GetCallId())
	if err != nil {
		return nil, err
	}
	creq, err := shared.ChatRequestFromProto(req)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	r, err := h.Complete(ctx, creq)
	if err != nil {
		return nil, shared.StatusError(err)
	}
	out, err := shared.ChatResponseToProto(r)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return out, nil
}

func (s *hostServer) Progress(ctx context.Context, req *pb.ProgressRequest) (*pb.PlanProgress, error) {
	h, err := s.c.hostFor(req.GetCallId())
	if err != nil {
		return nil, err
	}
	p, err := h.Progress(ctx, req.GetPlan())
	if err != nil {
		return nil, shared.StatusError(err)
	}
	return shared.ProgressToProto(p), nil
}

func (s *hostServer) TickTask(ctx context.Context, req *pb.TickTaskRequest) (*pb.PlanProgress, error) {
	h, err := s.c.hostFor(req.GetCallId())
	if err != nil {
		return nil, err
	}
	t := shared.TaskFromProto(req.GetTask())
	if t == nil {
		return nil, status.Error(codes.InvalidArgument, "TickTask needs a task")
	}
	p, err := h.TickTask(ctx, req.GetPlan(), *t)
	if err != nil {
		return nil, shared.StatusError(err)
	}
	return shared.ProgressToProto(p), nil
}

func (s *hostServer) Log(ctx context.Context, req *pb.LogRequest) (*pb.LogResponse, error) {
	h, err := s.c.hostFor(req.GetCallId())
	if err != nil {
		return nil, err
	}
	if err := h.Log(ctx, strings.ToLower(req.GetLevel()), req.GetMessage()); err != nil {
		return nil, shared.StatusError(err)
	}
	return &pb.LogResponse{}, nil
}

// checkManifest reports whether a manifest describes a plugin this host can
// run.
func checkManifest(m plugins.Manifest) error {
	var errs []error
	if m.ProtocolVersion != plugins.ProtocolVersion {
		errs = append(errs, fmt.Errorf("speaks plugin protocol %d, this weave speaks %d: rebuild the plugin against this weave's plugins package",
			m.ProtocolVersion, plugins.ProtocolVersion))
	}
	if m.Name == "" {
		errs = append(errs, errors.New("its Info has no name"))
	}
	switch m.Kind {
	case plugins.KindHook:
		if len(m.Events) == 0 {
			errs = append(errs, errors.New("hook lists no events in its Info"))
		}
		if err := m.CheckTools(); err != nil {
			errs = append(errs, err)
		}
	case plugins.KindAgent:
		if m.Role == "" {
			errs = append(errs, errors.New("agent has no role in its Info"))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown kind %q (want %q or %q)", m.Kind, plugins.KindHook, plugins.KindAgent))
	}
	return errors.Join(errs...)
}

// Interface guards.
var (
	_ plugins.Hook  = hookClient{}
	_ plugins.Agent = agentClient{}
)
