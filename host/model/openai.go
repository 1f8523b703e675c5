package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/weavehq/weave/plugins"
)

// openAIBaseURL is OpenAI's own endpoint, used when model.base_url is empty.
const openAIBaseURL = "https://api.openai.com/v1/"

// openAIProvider speaks Chat Completions with the official SDK, to OpenAI or
// to any server that speaks its wire format.
type openAIProvider struct {
	chat   openai.ChatCompletionService
	models openai.ModelService
	// compatible is set for a base_url other than OpenAI's: such servers
	// know max_tokens rather than max_completion_tokens.
	compatible bool
	// effort is sent as reasoning_effort; "": none.
	effort string
	// thinking, when above 0, is sent as Gemini's thinking_budget.
	thinking int
	// name is the provider's name in errors (openai, azure, gemini).
	name string
	// deployment, when set, is sent as the model (Azure's deployment).
	deployment string
	// unlisted says the models the server lists are not the names a
	// request uses (Azure lists base models, a request names a
	// deployment): Models checks the endpoint and the key, and names none.
	unlisted bool
}

func newOpenAI(s Settings) Provider {
	base := s.BaseURL
	if base == "" {
		base = openAIBaseURL
	}
	// The service is built from explicit options only: the SDK's client
	// constructor would also read OPENAI_* variables, and the host decides
	// which key and endpoint are used.
	opts := []option.RequestOption{option.WithBaseURL(base)}
	if s.APIKey != "" {
		opts = append(opts, option.WithAPIKey(s.APIKey))
	}
	p := openAIWire(s, opts...)
	p.compatible = s.BaseURL != "" && !strings.HasPrefix(s.BaseURL, "https://api.openai.com")
	return p
}

// openAIWire is a provider speaking Chat Completions with the settings
// every OpenAI-wire provider shares, and the endpoint and auth options
// of its own.
func openAIWire(s Settings, endpoint ...option.RequestOption) *openAIProvider {
	opts := append([]option.RequestOption{
		option.WithHTTPClient(s.HTTPClient),
		option.WithMaxRetries(s.MaxRetries),
		openAICounter(),
	}, endpoint...)
	return &openAIProvider{
		chat:   openai.NewChatCompletionService(opts...),
		models: openai.NewModelService(opts...),
		effort: s.ReasoningEffort,
		name:   s.Provider,
	}
}

func (p *openAIProvider) Complete(ctx context.Context, req plugins.ChatRequest, onDelta func(Delta)) (plugins.ChatResponse, error) {
	params, err := p.params(req)
	if err != nil {
		return plugins.ChatResponse{}, err
	}
	if onDelta == nil {
		c, err := p.chat.New(ctx, params)
		if err != nil {
			return plugins.ChatResponse{}, p.apiError(err)
		}
		return openAIResponse(c, req)
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := p.chat.NewStreaming(ctx, params)
	defer stream.Close()
	var acc openAIStream
	for stream.Next() {
		acc.add(stream.Current(), onDelta)
	}
	if err := stream.Err(); err != nil {
		return plugins.ChatResponse{}, p.apiError(err)
	}
	if acc.finish == "" {
		// A connection closed mid-answer, or a body that is no SSE,
		// ends the SDK's stream without an error.
		return plugins.ChatResponse{}, fmt.Errorf("%w: openai stream closed without a choice carrying a finish_reason", ErrStreamCut)
	}
	return acc.response(req)
}

// Models lists the models the server offers (GET /models, which Ollama,
// vLLM, llama.cpp, LM Studio and OpenRouter serve too).
func (p *openAIProvider) Models(ctx context.Context) ([]string, error) {
	page, err := p.models.List(ctx)
	if err != nil {
		return nil, p.apiError(err)
	}
	if p.unlisted {
		return nil, nil
	}
	var out []string
	for _, m := range page.Data {
		out = append(out, m.ID)
	}
	return out, nil
}

func (p *openAIProvider) params(req plugins.ChatRequest) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	if p.deployment != "" {
		params.Model = shared.ChatModel(p.deployment)
	}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case plugins.RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case plugins.RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case plugins.RoleTool:
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case plugins.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, c := range m.ToolCalls {
				args, err := json.Marshal(argsOrEmpty(c.Args))
				if err != nil {
					return params, fmt.Errorf("encode arguments of tool call %s: %w", c.ID, err)
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Tool, Arguments: string(args)},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return params, fmt.Errorf("chat message %d has unknown role %q", len(params.Messages), m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t)
		if err != nil {
			return params, err
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(def))
	}
	reasoning := p.effort != "" && p.effort != string(shared.ReasoningEffortNone)
	if p.effort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(p.effort)
	}
	if p.thinking > 0 {
		// Gemini takes its budget beside the OpenAI fields, as its
		// OpenAI-compatible endpoint documents.
		params.SetExtraFields(map[string]any{"extra_body": map[string]any{"google": map[string]any{
			"thinking_config": map[string]any{"thinking_budget": p.thinking}}}})
		reasoning = true
	}
	// Reasoning models refuse a temperature other than their own.
	if req.Temperature != nil && !reasoning {
		params.Temperature = openai.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		if p.compatible {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	return params, nil
}

// openAIStream gathers a streamed answer. Servers differ here: OpenAI and
// vLLM send each tool call's index and id on its first delta and only
// argument pieces after; Ollama and some llama.cpp builds send whole calls
// with no index and no id, several in one delta. A delta with an index goes
// to that call; one without goes to a new call when it names a tool or
// carries an id, else to the last call.
type openAIStream struct {
	model  string
	text   strings.Builder
	calls  []*streamCall
	byIdx  map[int64]*streamCall
	finish string
	usage  *openai.CompletionUsage
}

type streamCall struct {
	id, name string
	args     strings.Builder
	started  bool
}

func (s *openAIStream) add(chunk openai.ChatCompletionChunk, onDelta func(Delta)) {
	if chunk.Model != "" {
		s.model = chunk.Model
	}
	if chunk.JSON.Usage.Valid() {
		u := chunk.Usage
		s.usage = &u
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // we never ask for n > 1
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
		}
		if ch.Delta.Content != "" {
			s.text.WriteString(ch.Delta.Content)
			onDelta(Delta{Text: ch.Delta.Content})
		}
		for _, tc := range ch.Delta.ToolCalls {
			c := s.callFor(tc)
			if tc.ID != "" {
				c.id = tc.ID
			}
			if tc.Function.Name != "" {
				c.name += tc.Function.Name
			}
			c.args.WriteString(tc.Function.Arguments)
			if !c.started && c.name != "" {
				c.started = true
				if c.id == "" {
					c.id = fmt.Sprintf("call_%d", len(s.calls))
				}
				onDelta(Delta{ToolCall: &plugins.ToolCall{ID: c.id, Tool: c.name}})
			}
			onDelta(Delta{Hidden: tc.Function.Name + tc.Function.Arguments})
		}
	}
}

func (s *openAIStream) callFor(tc openai.ChatCompletionChunkChoiceDeltaToolCall) *streamCall {
	if tc.JSON.Index.Valid() {
		// Some servers number every call 0 and tell them apart by id.
		if c, ok := s.byIdx[tc.Index]; ok && (tc.ID == "" || c.id == "" || tc.ID == c.id) {
			return c
		}
		c := &streamCall{}
		if s.byIdx == nil {
			s.byIdx = map[int64]*streamCall{}
		}
		s.byIdx[tc.Index] = c
		s.calls = append(s.calls, c)
		return c
	}
	last := len(s.calls) - 1
	if last < 0 || tc.Function.Name != "" || (tc.ID != "" && tc.ID != s.calls[last].id) {
		c := &streamCall{}
		s.calls = append(s.calls, c)
		return c
	}
	return s.calls[last]
}

func (s *openAIStream) response(req plugins.ChatRequest) (plugins.ChatResponse, error) {
	msg := plugins.ChatMessage{Role: plugins.RoleAssistant, Content: s.text.String()}
	for i, c := range s.calls {
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i+1)
		}
		args, err := decodeArgs(c.name, c.args.String())
		if err != nil {
			return plugins.ChatResponse{}, err
		}
		msg.ToolCalls = append(msg.ToolCalls, plugins.ToolCall{ID: id, Tool: c.name, Args: args})
	}
	resp := plugins.ChatResponse{Message: msg, Model: s.model, StopReason: stopReason(s.finish, len(msg.ToolCalls) > 0)}
	if s.usage != nil {
		resp.Usage = openAIUsage(*s.usage)
	} else {
		resp.Usage = estimateUsage(req, msg)
	}
	return resp, nil
}

func openAIResponse(c *openai.ChatCompletion, req plugins.ChatRequest) (plugins.ChatResponse, error) {
	if len(c.Choices) == 0 {
		return plugins.ChatResponse{}, errors.New("openai answered with no choices")
	}
	ch := c.Choices[0]
	msg := plugins.ChatMessage{Role: plugins.RoleAssistant, Content: ch.Message.Content}
	for i, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i+1)
		}
		args, err := decodeArgs(tc.Function.Name, tc.Function.Arguments)
		if err != nil {
			return plugins.ChatResponse{}, err
		}
		msg.ToolCalls = append(msg.ToolCalls, plugins.ToolCall{ID: id, Tool: tc.Function.Name, Args: args})
	}
	resp := plugins.ChatResponse{Message: msg, Model: c.Model, StopReason: stopReason(ch.FinishReason, len(msg.ToolCalls) > 0)}
	if c.JSON.Usage.Valid() {
		resp.Usage = openAIUsage(c.Usage)
	} else {
		resp.Usage = estimateUsage(req, msg)
	}
	return resp, nil
}

func openAIUsage(u openai.CompletionUsage) plugins.Usage {
	return plugins.Usage{
		InputTokens:     u.PromptTokens,
		OutputTokens:    u.CompletionTokens,
		CacheReadTokens: u.PromptTokensDetails.CachedTokens,
	}
}

func (p *openAIProvider) apiError(err error) error {
	err = openAIError(err)
	if api, ok := err.(*APIError); ok && p.name != "" {
		api.Provider = p.name
	}
	return err
}

func openAIError(err error) error {
	var e *openai.Error
	if !errors.As(err, &e) {
		return &readError{err: err}
	}
	out := &APIError{Provider: "openai", Status: e.StatusCode, Message: e.Message, Type: e.Code}
	if out.Type == "" {
		out.Type = e.Type
	}
	if out.Message == "" {
		// Servers that are not OpenAI often answer {"error": "text"} or
		// plain text.
		out.Message = looseErrorText(e.RawJSON())
	}
	return out
}

// looseErrorText finds an error's text in the shapes compatible servers use.
func looseErrorText(raw string) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal([]byte(raw), &v) != nil {
		return strings.TrimSpace(raw)
	}
	var s string
	if json.Unmarshal(v.Error, &s) == nil && s != "" {
		return s
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(v.Error, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	if v.Message != "" {
		return v.Message
	}
	return v.Detail
}

// stopReason maps the finish reasons servers send to the contract's: "end",
// "tool_calls", "max_tokens", or the server's own word. Ollama says "stop"
// even when it asks for tools, so tool calls decide first.
func stopReason(reason string, hasCalls bool) string {
	if hasCalls {
		return "tool_calls"
	}
	switch strings.ToLower(reason) {
	case "", "stop", "end_turn", "eos", "eos_token", "stop_sequence":
		return "end"
	case "length", "max_tokens", "model_length":
		return "max_tokens"
	case "tool_calls", "tool_use", "function_call":
		return "tool_calls"
	}
	return reason
}

// decodeArgs reads a tool call's JSON arguments; empty means none.
func decodeArgs(tool, raw string) (map[string]any, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" || raw == "null" {
		return map[string]any{}, nil
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		return nil, fmt.Errorf("the model's arguments for tool %s are not a JSON object (%.80q): %w", tool, raw, err)
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

func argsOrEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}

// schemaMap decodes a tool's JSON Schema; no schema means an object with no
// properties.
func schemaMap(t plugins.ToolSpec) (map[string]any, error) {
	if len(t.Schema) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(t.Schema, &m); err != nil {
		return nil, fmt.Errorf("tool %s: schema is not a JSON object: %w", t.Name, err)
	}
	return m, nil
}

// estimateUsage guesses token counts, about four characters a token, for
// servers that send none.
func estimateUsage(req plugins.ChatRequest, out plugins.ChatMessage) plugins.Usage {
	in := len(req.System)
	for _, m := range req.Messages {
		in += len(m.Content)
		for _, c := range m.ToolCalls {
			b, _ := json.Marshal(c.Args)
			in += len(c.Tool) + len(b)
		}
	}
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	o := len(out.Content)
	for _, c := range out.ToolCalls {
		b, _ := json.Marshal(c.Args)
		o += len(c.Tool) + len(b)
	}
	return plugins.Usage{InputTokens: int64((in + 3) / 4), OutputTokens: int64((o + 3) / 4)}
}
