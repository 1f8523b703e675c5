package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/weavehq/weave/internal/safefile"
	"github.com/weavehq/weave/plugins"
)

// Claude Code hook event names.
const (
	ClaudePreToolUse       = "PreToolUse"
	ClaudePostToolUse      = "PostToolUse"
	ClaudeUserPromptSubmit = "UserPromptSubmit"
	ClaudeStop             = "Stop"
	ClaudeSessionStart     = "SessionStart"
	ClaudeSessionEnd       = "SessionEnd"
	ClaudePreCompact       = "PreCompact"
)

// claudeEvents maps Claude Code hook events to Weave events.
var claudeEvents = map[string]string{
	ClaudePreToolUse:       plugins.EventToolExecuteBefore,
	ClaudePostToolUse:      plugins.EventToolExecuteAfter,
	ClaudeUserPromptSubmit: plugins.EventChatMessage,
	ClaudeStop:             plugins.EventSessionIdle,
	ClaudeSessionStart:     plugins.EventSessionStart,
	ClaudeSessionEnd:       plugins.EventSessionEnd,
	ClaudePreCompact:       plugins.EventSessionCompacting,
}

// ClaudeEventNames lists the Claude Code events a command hook may name.
func ClaudeEventNames() []string {
	return []string{ClaudePreToolUse, ClaudePostToolUse, ClaudeUserPromptSubmit, ClaudeStop, ClaudeSessionStart, ClaudeSessionEnd, ClaudePreCompact}
}

// ClaudeHookTypes lists the Claude Code hook types Weave runs: command
// hooks only (no prompt hooks).
func ClaudeHookTypes() []string { return []string{"command"} }

// WeaveEvent returns the Weave event for a Claude Code hook event.
func WeaveEvent(claude string) (string, bool) {
	ev, ok := claudeEvents[claude]
	return ev, ok
}

// ClaudeToolName returns Claude Code's name for a Weave tool (from the
// host's table of tools, plugins.Tools); unknown tools keep their name.
func ClaudeToolName(tool string) string {
	if d, ok := plugins.LookupTool(tool); ok && d.Claude != "" {
		return d.Claude
	}
	return tool
}

// WeaveToolName returns the Weave tool for a Claude Code tool name; unknown
// names are lower-cased.
func WeaveToolName(claude string) string {
	for _, d := range plugins.Tools() {
		if d.Claude == claude {
			return d.Name
		}
	}
	return strings.ToLower(claude)
}

// claudeRenames lists a tool's argument renames: Weave name -> Claude name.
func claudeRenames(tool string) map[string]string {
	d, _ := plugins.LookupTool(tool)
	return d.ClaudeArgs
}

// ClaudeToolInput converts Weave tool arguments to Claude's tool_input. File
// paths become absolute (against cwd), as Claude Code sends them.
func ClaudeToolInput(tool string, args map[string]any, cwd string) map[string]any {
	in := make(map[string]any, len(args))
	renames := claudeRenames(tool)
	for k, v := range args {
		if c, ok := renames[k]; ok {
			if c == "file_path" {
				if s, ok := v.(string); ok && s != "" && !filepath.IsAbs(s) && cwd != "" {
					v = filepath.Join(cwd, s)
				}
			}
			k = c
		}
		in[k] = v
	}
	return in
}

// WeaveToolArgs converts Claude's tool_input to Weave tool arguments.
func WeaveToolArgs(tool string, in map[string]any) map[string]any {
	args := make(map[string]any, len(in))
	back := make(map[string]string)
	for w, c := range claudeRenames(tool) {
		back[c] = w
	}
	for k, v := range in {
		if w, ok := back[k]; ok {
			k = w
		}
		args[k] = v
	}
	return args
}

// claudeInput is the JSON a Claude Code command hook reads on stdin.
type claudeInput struct {
	SessionID      string         `json:"session_id"`
	TranscriptPath string         `json:"transcript_path"`
	Cwd            string         `json:"cwd"`
	PermissionMode string         `json:"permission_mode,omitempty"`
	HookEventName  string         `json:"hook_event_name"`
	ToolName       string         `json:"tool_name,omitempty"`
	ToolInput      map[string]any `json:"tool_input,omitempty"`
	ToolResponse   any            `json:"tool_response,omitempty"`
	ToolUseID      string         `json:"tool_use_id,omitempty"`
	Prompt         string         `json:"prompt,omitempty"`
	StopHookActive *bool          `json:"stop_hook_active,omitempty"`
	Source         string         `json:"source,omitempty"`
	Reason         string         `json:"reason,omitempty"`
	Trigger        string         `json:"trigger,omitempty"`
	// CustomInstructions is a pointer so PreCompact always carries it.
	CustomInstructions *string `json:"custom_instructions,omitempty"`
}

func dataString(ev plugins.Event, key, def string) string {
	if s, ok := ev.Data[key].(string); ok && s != "" {
		return s
	}
	return def
}

// ClaudeInput builds the JSON a Claude Code hook expects on stdin for ev.
func ClaudeInput(ev plugins.Event, claudeEvent string) ([]byte, error) {
	in := claudeInput{
		SessionID:      ev.SessionID,
		TranscriptPath: dataString(ev, "transcript_path", ""),
		Cwd:            ev.Cwd,
		PermissionMode: "default",
		HookEventName:  claudeEvent,
	}
	switch claudeEvent {
	case ClaudePreToolUse, ClaudePostToolUse:
		in.ToolName = ClaudeToolName(ev.Tool)
		in.ToolInput = ClaudeToolInput(ev.Tool, ev.Args, ev.Cwd)
		if in.ToolInput == nil {
			in.ToolInput = map[string]any{}
		}
		in.ToolUseID = dataString(ev, "tool_use_id", "")
		if claudeEvent == ClaudePostToolUse {
			resp := map[string]any{"success": true}
			if ev.Result != nil {
				resp["output"] = ev.Result.Output
				resp["success"] = !ev.Result.IsError
				resp["exit_code"] = ev.Result.ExitCode
				if ev.Result.IsError {
					resp["is_error"] = true
				}
			}
			if p, ok := in.ToolInput["file_path"]; ok {
				resp["filePath"] = p
			}
			in.ToolResponse = resp
		}
	case ClaudeUserPromptSubmit:
		in.Prompt = ev.Message
	case ClaudeStop:
		active, _ := ev.Data["stop_hook_active"].(bool)
		in.StopHookActive = &active
	case ClaudeSessionStart:
		in.Source = dataString(ev, "source", "startup")
	case ClaudeSessionEnd:
		in.Reason = dataString(ev, "reason", "other")
	case ClaudePreCompact:
		in.Trigger = dataString(ev, "trigger", "auto")
		ci := dataString(ev, "custom_instructions", "")
		in.CustomInstructions = &ci
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode %s input: %w", claudeEvent, err)
	}
	return b, nil
}

// maxEventFile bounds a sample event file.
const maxEventFile = 4 << 20

// LoadEventFile reads a sample event for `weave hooks test`. The file holds
// either a Weave event (see plugins.Event) or a Claude Code hook input (it
// has hook_event_name), which is converted.
func LoadEventFile(path string) (plugins.Event, error) {
	b, err := safefile.ReadFile(path, maxEventFile)
	if err != nil {
		return plugins.Event{}, fmt.Errorf("read event file: %w", err)
	}
	ev, err := ParseEvent(b)
	if err != nil {
		return plugins.Event{}, fmt.Errorf("event file %s: %w", path, err)
	}
	return ev, nil
}

// ReadEvent reads a sample event from r (`--event -`), bounded as a file is.
func ReadEvent(r io.Reader) (plugins.Event, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxEventFile+1))
	if err != nil {
		return plugins.Event{}, fmt.Errorf("read event from stdin: %w", err)
	}
	if len(b) > maxEventFile {
		return plugins.Event{}, fmt.Errorf("event on stdin is over %d MiB", maxEventFile>>20)
	}
	ev, err := ParseEvent(b)
	if err != nil {
		return plugins.Event{}, fmt.Errorf("event on stdin: %w", err)
	}
	return ev, nil
}

// ParseEvent decodes a Weave event or a Claude Code hook input.
func ParseEvent(b []byte) (plugins.Event, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return plugins.Event{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, ok := probe["hook_event_name"]; ok {
		return parseClaudeInput(b)
	}
	var ev plugins.Event
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return plugins.Event{}, fmt.Errorf("decode event: %w (expected a Weave event with \"name\", or a Claude Code hook input with \"hook_event_name\")", err)
	}
	if ev.Name == "" {
		return plugins.Event{}, fmt.Errorf("event has no \"name\" (one of: %s)", strings.Join(plugins.Events, ", "))
	}
	if !slices.Contains(plugins.Events, ev.Name) {
		return plugins.Event{}, fmt.Errorf("unknown event %q (one of: %s)", ev.Name, strings.Join(plugins.Events, ", "))
	}
	return ev, nil
}

func parseClaudeInput(b []byte) (plugins.Event, error) {
	var in claudeInput
	if err := json.Unmarshal(b, &in); err != nil {
		return plugins.Event{}, fmt.Errorf("decode Claude Code hook input: %w", err)
	}
	name, ok := WeaveEvent(in.HookEventName)
	if !ok {
		return plugins.Event{}, fmt.Errorf("unsupported hook_event_name %q (supported: %s)", in.HookEventName, strings.Join(ClaudeEventNames(), ", "))
	}
	ev := plugins.Event{Name: name, SessionID: in.SessionID, Cwd: in.Cwd, Time: time.Now().UTC()}
	data := map[string]any{}
	if in.TranscriptPath != "" {
		data["transcript_path"] = in.TranscriptPath
	}
	switch in.HookEventName {
	case ClaudePreToolUse, ClaudePostToolUse:
		if in.ToolName == "" {
			return plugins.Event{}, fmt.Errorf("%s input has no tool_name", in.HookEventName)
		}
		ev.Tool = WeaveToolName(in.ToolName)
		ev.Args = WeaveToolArgs(ev.Tool, in.ToolInput)
		if in.ToolUseID != "" {
			data["tool_use_id"] = in.ToolUseID
		}
		if in.HookEventName == ClaudePostToolUse {
			ev.Result = claudeResponseToResult(in.ToolResponse)
		}
	case ClaudeUserPromptSubmit:
		ev.Message = in.Prompt
	case ClaudeStop:
		if in.StopHookActive != nil {
			data["stop_hook_active"] = *in.StopHookActive
		}
	case ClaudeSessionStart:
		if in.Source != "" {
			data["source"] = in.Source
		}
	case ClaudeSessionEnd:
		if in.Reason != "" {
			data["reason"] = in.Reason
		}
	case ClaudePreCompact:
		if in.Trigger != "" {
			data["trigger"] = in.Trigger
		}
	}
	if len(data) > 0 {
		ev.Data = data
	}
	return ev, nil
}

func claudeResponseToResult(resp any) *plugins.ToolResult {
	switch r := resp.(type) {
	case nil:
		return &plugins.ToolResult{}
	case string:
		return &plugins.ToolResult{Output: r}
	case map[string]any:
		res := &plugins.ToolResult{}
		for _, k := range []string{"output", "stdout", "content"} {
			if s, ok := r[k].(string); ok {
				res.Output = s
				break
			}
		}
		if s, ok := r["success"].(bool); ok && !s {
			res.IsError = true
		}
		if e, ok := r["is_error"].(bool); ok && e {
			res.IsError = true
		}
		if c, ok := r["exit_code"].(float64); ok {
			res.ExitCode = int(c)
		}
		return res
	default:
		b, _ := json.Marshal(r)
		return &plugins.ToolResult{Output: string(b)}
	}
}
