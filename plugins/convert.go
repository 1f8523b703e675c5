package plugins

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/weavehq/weave/plugins/internal/proto/weave/v1"
)

// This file is the one place where the public Go types and the generated
// protobuf types meet.

func marshalObject(m map[string]any) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	raw := map[string]any{}
	collectRaw(m, "", raw)
	if len(raw) > 0 {
		// A shallow copy: the caller's map is not the place for the key.
		c := make(map[string]any, len(m)+1)
		for k, v := range m {
			c[k] = v
		}
		c[rawStringsKey] = raw
		m = c
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode arguments as JSON: %w", err)
	}
	return b, nil
}

func unmarshalObject(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode JSON object: %w", err)
	}
	restoreRaw(m)
	return m, nil
}

func infoToProto(in Info) *pb.PluginInfo {
	return &pb.PluginInfo{
		Name:     in.Name,
		Version:  in.Version,
		Kind:     string(in.Kind),
		Events:   in.Events,
		Priority: int32(in.Priority),
		Role:     in.Role,
		Tools:    toolsToProto(in.Tools),
	}
}

func toolsToProto(in map[string][]string) map[string]*pb.ToolNames {
	if in == nil {
		return nil
	}
	out := make(map[string]*pb.ToolNames, len(in))
	for ev, names := range in {
		out[ev] = &pb.ToolNames{Names: names}
	}
	return out
}

func toolsFromProto(in map[string]*pb.ToolNames) map[string][]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string][]string, len(in))
	for ev, names := range in {
		// A key with no names stays a key: it means "no tool".
		out[ev] = append([]string{}, names.GetNames()...)
	}
	return out
}

func infoFromProto(in *pb.PluginInfo) Info {
	return Info{
		Name:     in.GetName(),
		Version:  in.GetVersion(),
		Kind:     Kind(in.GetKind()),
		Events:   in.GetEvents(),
		Priority: int(in.GetPriority()),
		Role:     in.GetRole(),
		Tools:    toolsFromProto(in.GetTools()),
	}
}

func manifestToProto(m Manifest) *pb.Manifest {
	return &pb.Manifest{Info: infoToProto(m.Info), ProtocolVersion: int32(m.ProtocolVersion)}
}

func manifestFromProto(m *pb.Manifest) Manifest {
	return Manifest{Info: infoFromProto(m.GetInfo()), ProtocolVersion: int(m.GetProtocolVersion())}
}

func taskToProto(t *TaskRef) *pb.TaskRef {
	if t == nil {
		return nil
	}
	return validUTF8(&pb.TaskRef{Number: int32(t.Number), Title: t.Title})
}

func taskFromProto(t *pb.TaskRef) *TaskRef {
	if t == nil {
		return nil
	}
	return &TaskRef{Number: int(t.GetNumber()), Title: t.GetTitle()}
}

func toolResultToProto(r *ToolResult) *pb.ToolResult {
	if r == nil {
		return nil
	}
	return validUTF8(&pb.ToolResult{Output: r.Output, IsError: r.IsError, ExitCode: int32(r.ExitCode), Denied: r.Denied,
		BlockedBy: r.BlockedBy, Reason: r.Reason})
}

func toolResultFromProto(r *pb.ToolResult) *ToolResult {
	if r == nil {
		return nil
	}
	return &ToolResult{Output: r.GetOutput(), IsError: r.GetIsError(), ExitCode: int(r.GetExitCode()), Denied: r.GetDenied(),
		BlockedBy: r.GetBlockedBy(), Reason: r.GetReason()}
}

func toolCallToProto(c ToolCall) (*pb.ToolCall, error) {
	args, err := marshalObject(c.Args)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", c.Tool, err)
	}
	return &pb.ToolCall{Tool: c.Tool, ArgsJson: args, Id: c.ID}, nil
}

func toolCallFromProto(c *pb.ToolCall) (ToolCall, error) {
	args, err := unmarshalObject(c.GetArgsJson())
	if err != nil {
		return ToolCall{}, fmt.Errorf("tool %s arguments: %w", c.GetTool(), err)
	}
	return ToolCall{Tool: c.GetTool(), Args: args, ID: c.GetId()}, nil
}

func eventToProto(ev Event) (*pb.Event, error) {
	args, err := marshalObject(ev.Args)
	if err != nil {
		return nil, fmt.Errorf("event %s args: %w", ev.Name, err)
	}
	data, err := marshalObject(ev.Data)
	if err != nil {
		return nil, fmt.Errorf("event %s data: %w", ev.Name, err)
	}
	out := &pb.Event{
		Name:      ev.Name,
		SessionId: ev.SessionID,
		Agent:     ev.Agent,
		Cwd:       ev.Cwd,
		Tool:      ev.Tool,
		ArgsJson:  args,
		Result:    toolResultToProto(ev.Result),
		Message:   ev.Message,
		Command:   ev.Command,
		Arguments: ev.Arguments,
		Plan:      ev.Plan,
		Task:      taskToProto(ev.Task),
		DataJson:  data,
	}
	if !ev.Time.IsZero() {
		out.Time = timestamppb.New(ev.Time)
	}
	return validUTF8(out), nil
}

func eventFromProto(ev *pb.Event) (Event, error) {
	args, err := unmarshalObject(ev.GetArgsJson())
	if err != nil {
		return Event{}, fmt.Errorf("event %s args: %w", ev.GetName(), err)
	}
	data, err := unmarshalObject(ev.GetDataJson())
	if err != nil {
		return Event{}, fmt.Errorf("event %s data: %w", ev.GetName(), err)
	}
	out := Event{
		Name:      ev.GetName(),
		SessionID: ev.GetSessionId(),
		Agent:     ev.GetAgent(),
		Cwd:       ev.GetCwd(),
		Tool:      ev.GetTool(),
		Args:      args,
		Result:    toolResultFromProto(ev.GetResult()),
		Message:   ev.GetMessage(),
		Command:   ev.GetCommand(),
		Arguments: ev.GetArguments(),
		Plan:      ev.GetPlan(),
		Task:      taskFromProto(ev.GetTask()),
		Data:      data,
	}
	if ev.GetTime() != nil {
		out.Time = ev.GetTime().AsTime()
	}
	return out, nil
}

func decisionToProto(d Decision) (*pb.Decision, error) {
	args, err := marshalObject(d.Args)
	if err != nil {
		return nil, fmt.Errorf("decision args: %w", err)
	}
	return validUTF8(&pb.Decision{Action: string(d.Action), Reason: d.Reason, ArgsJson: args, Text: d.Text, Context: d.Context}), nil
}

func decisionFromProto(d *pb.Decision) (Decision, error) {
	args, err := unmarshalObject(d.GetArgsJson())
	if err != nil {
		return Decision{}, fmt.Errorf("decision args: %w", err)
	}
	action := Action(d.GetAction())
	switch action {
	case "":
		action = Allow
	case Allow, Block, Modify, Ask:
	default:
		return Decision{}, fmt.Errorf("unknown decision action %q (want allow, block, modify or ask)", action)
	}
	return Decision{Action: action, Reason: d.GetReason(), Args: args, Text: d.GetText(), Context: d.GetContext()}, nil
}

func agentRequestToProto(callID uint64, r AgentRequest) (*pb.AgentHandleRequest, error) {
	out := &pb.AgentHandleRequest{
		CallId:    callID,
		SessionId: r.SessionID,
		Prompt:    r.Prompt,
		Plan:      r.Plan,
		Task:      taskToProto(r.Task),
		DataJson:  r.Data,
	}
	for _, m := range r.History {
		pm, err := chatMessageToProto(m)
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		out.History = append(out.History, pm)
	}
	return validUTF8(out), nil
}

func agentRequestFromProto(r *pb.AgentHandleRequest) (AgentRequest, error) {
	out := AgentRequest{
		SessionID: r.GetSessionId(),
		Prompt:    r.GetPrompt(),
		Plan:      r.GetPlan(),
		Task:      taskFromProto(r.GetTask()),
		Data:      r.GetDataJson(),
	}
	for _, pm := range r.GetHistory() {
		m, err := chatMessageFromProto(pm)
		if err != nil {
			return AgentRequest{}, fmt.Errorf("history: %w", err)
		}
		out.History = append(out.History, m)
	}
	return out, nil
}

func agentResponseToProto(r AgentResponse) *pb.AgentResponse {
	return validUTF8(&pb.AgentResponse{Output: r.Output, Done: r.Done, Error: r.Error, BlockedBy: r.BlockedBy})
}

func agentResponseFromProto(r *pb.AgentResponse) AgentResponse {
	return AgentResponse{Output: r.GetOutput(), Done: r.GetDone(), Error: r.GetError(), BlockedBy: r.GetBlockedBy()}
}

func chatMessageToProto(m ChatMessage) (*pb.ChatMessage, error) {
	out := &pb.ChatMessage{Role: string(m.Role), Content: m.Content, ToolCallId: m.ToolCallID, IsError: m.IsError}
	for _, c := range m.ToolCalls {
		pc, err := toolCallToProto(c)
		if err != nil {
			return nil, err
		}
		out.ToolCalls = append(out.ToolCalls, pc)
	}
	return validUTF8(out), nil
}

func chatMessageFromProto(m *pb.ChatMessage) (ChatMessage, error) {
	out := ChatMessage{Role: ChatRole(m.GetRole()), Content: m.GetContent(), ToolCallID: m.GetToolCallId(), IsError: m.GetIsError()}
	for _, pc := range m.GetToolCalls() {
		c, err := toolCallFromProto(pc)
		if err != nil {
			return ChatMessage{}, err
		}
		out.ToolCalls = append(out.ToolCalls, c)
	}
	return out, nil
}

func chatRequestToProto(callID uint64, r ChatRequest) (*pb.CompleteRequest, error) {
	out := &pb.CompleteRequest{CallId: callID, Model: r.Model, System: r.System, MaxTokens: int32(r.MaxTokens)}
	if r.Temperature != nil {
		out.Temperature, out.HasTemperature = *r.Temperature, true
	}
	for _, m := range r.Messages {
		pm, err := chatMessageToProto(m)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, pm)
	}
	for _, t := range r.Tools {
		out.Tools = append(out.Tools, &pb.ToolSpec{Name: t.Name, Description: t.Description, SchemaJson: t.Schema})
	}
	return validUTF8(out), nil
}

func chatRequestFromProto(r *pb.CompleteRequest) (ChatRequest, error) {
	out := ChatRequest{Model: r.GetModel(), System: r.GetSystem(), MaxTokens: int(r.GetMaxTokens())}
	if r.GetHasTemperature() {
		t := r.GetTemperature()
		out.Temperature = &t
	}
	for _, pm := range r.GetMessages() {
		m, err := chatMessageFromProto(pm)
		if err != nil {
			return ChatRequest{}, err
		}
		out.Messages = append(out.Messages, m)
	}
	for _, t := range r.GetTools() {
		out.Tools = append(out.Tools, ToolSpec{Name: t.GetName(), Description: t.GetDescription(), Schema: t.GetSchemaJson()})
	}
	return out, nil
}

func usageToProto(u Usage) *pb.Usage {
	return &pb.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
}

func usageFromProto(u *pb.Usage) Usage {
	return Usage{InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens(), CacheReadTokens: u.GetCacheReadTokens(), CacheWriteTokens: u.GetCacheWriteTokens()}
}

func chatResponseToProto(r ChatResponse) (*pb.CompleteResponse, error) {
	m, err := chatMessageToProto(r.Message)
	if err != nil {
		return nil, err
	}
	return validUTF8(&pb.CompleteResponse{Message: m, StopReason: r.StopReason, Usage: usageToProto(r.Usage), Model: r.Model}), nil
}

func chatResponseFromProto(r *pb.CompleteResponse) (ChatResponse, error) {
	m, err := chatMessageFromProto(r.GetMessage())
	if err != nil {
		return ChatResponse{}, err
	}
	return ChatResponse{Message: m, StopReason: r.GetStopReason(), Usage: usageFromProto(r.GetUsage()), Model: r.GetModel()}, nil
}

func progressToProto(p PlanProgress) *pb.PlanProgress {
	out := &pb.PlanProgress{Plan: p.Plan, Total: int32(p.Total), Done: int32(p.Done)}
	for _, t := range p.Tasks {
		out.Tasks = append(out.Tasks, &pb.PlanTask{Number: int32(t.Number), Title: t.Title, Done: t.Done})
	}
	return validUTF8(out)
}

func progressFromProto(p *pb.PlanProgress) PlanProgress {
	out := PlanProgress{Plan: p.GetPlan(), Total: int(p.GetTotal()), Done: int(p.GetDone())}
	for _, t := range p.GetTasks() {
		out.Tasks = append(out.Tasks, PlanTask{Number: int(t.GetNumber()), Title: t.GetTitle(), Done: t.GetDone()})
	}
	return out
}
