package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/weavehq/weave/plugins"
)

// DefaultAnthropicMaxTokens is sent when neither the request nor
// model.max_tokens bounds the answer; the Messages API requires a bound.
const DefaultAnthropicMaxTokens = 8192

const anthropicBaseURL = "https://api.anthropic.com/"

// anthropicProvider speaks the Messages API with the official SDK. The
// system prompt and the tool list carry cache breakpoints, so that every
// turn after the first reads them from the prompt cache.
type anthropicProvider struct {
	msgs      anthropic.MessageService
	models    anthropic.ModelService
	maxTokens int
	// thinking, when above 0, turns on extended thinking with this
	// budget; thoughts keeps the thinking of answers that called tools.
	thinking int
	thoughts *thoughts
}

func newAnthropic(s Settings) Provider {
	base := s.BaseURL
	if base == "" {
		base = anthropicBaseURL
	}
	// Explicit options only: the SDK's client constructor would also read
	// ANTHROPIC_* variables and profile files.
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(s.HTTPClient),
		option.WithMaxRetries(s.MaxRetries),
		anthropicCounter(),
	}
	if s.APIKey != "" {
		opts = append(opts, option.WithAPIKey(s.APIKey))
	}
	mt := s.MaxTokens
	if mt <= 0 {
		mt = DefaultAnthropicMaxTokens
	}
	return &anthropicProvider{msgs: anthropic.NewMessageService(opts...), models: anthropic.NewModelService(opts...), maxTokens: mt,
		thinking: s.ThinkingBudget, thoughts: newThoughts()}
}

func (p *anthropicProvider) Complete(ctx context.Context, req plugins.ChatRequest, onDelta func(Delta)) (plugins.ChatResponse, error) {
	params, err := p.params(req)
	if err != nil {
		return plugins.ChatResponse{}, err
	}
	if onDelta == nil {
		m, err := p.msgs.New(ctx, params)
		if err != nil {
			return plugins.ChatResponse{}, anthropicError(err)
		}
		p.thoughts.keep(m)
		return anthropicResponse(m)
	}
	stream := p.msgs.NewStreaming(ctx, params)
	defer stream.Close()
	var m anthropic.Message
	stopped := false
	for stream.Next() {
		ev := stream.Current()
		if err := m.Accumulate(ev); err != nil {
			// Events out of order: not the stream the API sends.
			return plugins.ChatResponse{}, &readError{err: fmt.Errorf("anthropic stream: %w", err)}
		}
		switch ev.Type {
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				onDelta(Delta{ToolCall: &plugins.ToolCall{ID: ev.ContentBlock.ID, Tool: ev.ContentBlock.Name}})
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					onDelta(Delta{Text: ev.Delta.Text})
				}
			case "input_json_delta":
				onDelta(Delta{Hidden: ev.Delta.PartialJSON})
			case "thinking_delta":
				onDelta(Delta{Hidden: ev.Delta.Thinking})
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return plugins.ChatResponse{}, anthropicError(err)
	}
	if !stopped {
		// A connection closed mid-answer, or a body that is no SSE,
		// ends the SDK's stream without an error.
		return plugins.ChatResponse{}, fmt.Errorf("%w: anthropic stream closed without message_stop", ErrStreamCut)
	}
	p.thoughts.keep(&m)
	return anthropicResponse(&m)
}

// Models lists the models the API offers (GET /v1/models, first page).
func (p *anthropicProvider) Models(ctx context.Context) ([]string, error) {
	page, err := p.models.List(ctx, anthropic.ModelListParams{Limit: anthropic.Int(1000)})
	if err != nil {
		return nil, anthropicError(err)
	}
	var out []string
	for _, m := range page.Data {
		out = append(out, m.ID)
	}
	return out, nil
}

func (p *anthropicProvider) params(req plugins.ChatRequest) (anthropic.MessageNewParams, error) {
	mt := p.maxTokens
	if req.MaxTokens > 0 {
		mt = req.MaxTokens
	}
	params := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: int64(mt)}
	system := req.System
	var msgs []anthropic.MessageParam
	// The API wants user and assistant turns to alternate, so consecutive
	// messages of one side (tool results, then a nudge) share a turn.
	add := func(role anthropic.MessageParamRole, blocks ...anthropic.ContentBlockParamUnion) {
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
			return
		}
		msgs = append(msgs, anthropic.MessageParam{Role: role, Content: blocks})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case plugins.RoleSystem:
			system = strings.TrimSpace(system + "\n\n" + m.Content)
		case plugins.RoleUser:
			add(anthropic.MessageParamRoleUser, anthropic.NewTextBlock(m.Content))
		case plugins.RoleTool:
			add(anthropic.MessageParamRoleUser, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, m.IsError))
		case plugins.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if p.thinking > 0 && len(m.ToolCalls) > 0 {
				// The thinking of an answer that called tools goes back
				// with it, first and as it came.
				blocks = append(blocks, p.thoughts.of(m.ToolCalls[0].ID)...)
			}
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, argsOrEmpty(c.Args), c.Tool))
			}
			if len(blocks) > 0 {
				add(anthropic.MessageParamRoleAssistant, blocks...)
			}
		default:
			return params, fmt.Errorf("chat message has unknown role %q", m.Role)
		}
	}
	params.Messages = msgs
	if system != "" {
		params.System = []anthropic.TextBlockParam{{Text: system, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t)
		if err != nil {
			return params, err
		}
		in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					in.Required = append(in.Required, s)
				}
			}
		}
		for k, v := range schema {
			if k != "properties" && k != "required" && k != "type" {
				in.ExtraFields[k] = v
			}
		}
		tool := &anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: tool})
	}
	// A breakpoint on the last tool caches the whole list (tools come first
	// in the cached prefix); the system prompt's breakpoint covers both.
	if n := len(params.Tools); n > 0 {
		params.Tools[n-1].OfTool.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	if p.thinking > 0 && p.thinkingFits(msgs) {
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(p.thinking))
		if params.MaxTokens <= int64(p.thinking) {
			params.MaxTokens = int64(p.thinking) + DefaultAnthropicMaxTokens
		}
	} else if req.Temperature != nil {
		// Thinking takes no temperature but its own.
		params.Temperature = anthropic.Float(*req.Temperature)
	}
	return params, nil
}

// thinkingFits reports whether thinking may be on for a request: a tool
// loop is one assistant turn, and the API wants one thinking setting for
// it, so a loop that began without thinking (on another entry, before a
// fallback) goes on without.
func (p *anthropicProvider) thinkingFits(msgs []anthropic.MessageParam) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != anthropic.MessageParamRoleAssistant {
			continue
		}
		hasTool := false
		for _, b := range msgs[i].Content {
			if b.OfToolUse != nil {
				hasTool = true
			}
		}
		if !hasTool {
			return true
		}
		first := msgs[i].Content[0]
		return first.OfThinking != nil || first.OfRedactedThinking != nil
	}
	return true
}

func anthropicResponse(m *anthropic.Message) (plugins.ChatResponse, error) {
	msg := plugins.ChatMessage{Role: plugins.RoleAssistant}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args, err := decodeArgs(b.Name, string(b.Input))
			if err != nil {
				return plugins.ChatResponse{}, err
			}
			msg.ToolCalls = append(msg.ToolCalls, plugins.ToolCall{ID: b.ID, Tool: b.Name, Args: args})
		}
	}
	msg.Content = text.String()
	return plugins.ChatResponse{
		Message:    msg,
		Model:      string(m.Model),
		StopReason: stopReason(string(m.StopReason), len(msg.ToolCalls) > 0),
		Usage: plugins.Usage{
			InputTokens:      m.Usage.InputTokens,
			OutputTokens:     m.Usage.OutputTokens,
			CacheReadTokens:  m.Usage.CacheReadInputTokens,
			CacheWriteTokens: m.Usage.CacheCreationInputTokens,
		},
	}, nil
}

func anthropicError(err error) error {
	var e *anthropic.Error
	if !errors.As(err, &e) {
		return &readError{err: err}
	}
	out := &APIError{Provider: "anthropic", Status: e.StatusCode, Type: string(e.Type())}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(e.RawJSON()), &body) == nil && body.Error.Message != "" {
		out.Message = body.Error.Message
	} else {
		out.Message = looseErrorText(e.RawJSON())
	}
	return out
}
