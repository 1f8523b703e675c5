package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weavehq/weave/plugins/internal/wire"
)

type testHook struct {
	info Info
	err  error
}

func (h testHook) Info(context.Context) (Info, error) { return h.info, h.err }
func (h testHook) Handle(context.Context, Event) (Decision, error) {
	return Decision{Action: Allow}, nil
}

type testAgent struct{ info Info }

func (a testAgent) Info(context.Context) (Info, error) { return a.info, nil }
func (a testAgent) Handle(context.Context, Host, AgentRequest) (AgentResponse, error) {
	return AgentResponse{}, nil
}

// keepLogging restores the process's loggers, which serve points at the
// plugin's stderr, when the test ends.
func keepLogging(t *testing.T) {
	t.Helper()
	def, out, flags := slog.Default(), log.Writer(), log.Flags()
	t.Cleanup(func() {
		slog.SetDefault(def)
		log.SetOutput(out)
		log.SetFlags(flags)
	})
}

func TestServeDescribe(t *testing.T) {
	keepLogging(t)
	hookInfo := Info{Name: "guard", Version: "1.0.0", Events: []string{EventToolExecuteBefore}, Priority: 3}
	tests := []struct {
		name     string
		cfg      ServeConfig
		args     []string
		wantCode int
		wantOut  string // JSON, compared as values
		wantErr  string
	}{
		{
			name: "hook", cfg: ServeConfig{Hook: testHook{info: hookInfo}}, args: []string{"describe"},
			wantOut: `{"name":"guard","version":"1.0.0","kind":"hook","events":["tool.execute.before"],"priority":3,"protocol_version":1}`,
		},
		{
			name: "agent", cfg: ServeConfig{Agent: testAgent{info: Info{Name: "loom", Role: "loom"}}}, args: []string{"describe"},
			wantOut: `{"name":"loom","version":"","kind":"agent","role":"loom","protocol_version":1}`,
		},
		{
			name: "kind contradicts", cfg: ServeConfig{Hook: testHook{info: Info{Name: "x", Kind: KindAgent}}}, args: []string{"describe"},
			wantCode: 1, wantErr: `info says kind "agent" but the plugin serves a hook`,
		},
		{
			name: "info fails", cfg: ServeConfig{Hook: testHook{err: errors.New("no config")}}, args: []string{"describe"},
			wantCode: 1, wantErr: "no config",
		},
		{
			name: "nothing served", args: []string{"describe"},
			wantCode: 2, wantErr: "set Hook or Agent",
		},
		{
			name: "both served", cfg: ServeConfig{Hook: testHook{}, Agent: testAgent{}},
			wantCode: 2, wantErr: "set exactly one",
		},
		{
			name: "unknown argument", cfg: ServeConfig{Hook: testHook{info: hookInfo}}, args: []string{"--help"},
			wantCode: 2, wantErr: `the only argument a plugin takes is "describe"`,
		},
		{
			name: "run by hand", cfg: ServeConfig{Hook: testHook{info: hookInfo}},
			wantCode: 1, wantErr: "This is a Weave plugin",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := serve(tt.cfg, tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("serve(%v) = %d, want %d (stderr: %s)", tt.args, code, tt.wantCode, stderr.String())
			}
			if tt.wantErr != "" && !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("serve(%v) stderr = %q, want it to contain %q", tt.args, stderr.String(), tt.wantErr)
			}
			if tt.wantOut != "" {
				var got, want any
				if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
					t.Fatalf("describe printed %q: %v", stdout.String(), err)
				}
				if err := json.Unmarshal([]byte(tt.wantOut), &want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("describe output mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestHostErrorKeepsErrNoModel(t *testing.T) {
	for _, err := range []error{ErrNoModel, fmt.Errorf("provider: %w", ErrNoModel)} {
		if got := hostError("Model.Complete", statusError(err)); !errors.Is(got, ErrNoModel) {
			t.Errorf("hostError(statusError(%v)) = %v, want ErrNoModel", err, got)
		}
	}
	got := hostError("Tools.CallTool", statusError(errors.New("gate closed")))
	if got.Error() != "host Tools.CallTool: gate closed" {
		t.Errorf("hostError(gate closed) = %q", got)
	}
}

func TestDecisionFromProtoRejectsUnknownAction(t *testing.T) {
	pd, err := decisionToProto(Decision{Action: "maybe"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decisionFromProto(pd); err == nil || !strings.Contains(err.Error(), `unknown decision action "maybe"`) {
		t.Errorf("decisionFromProto(maybe) error = %v, want unknown action", err)
	}
}

func TestOrphaned(t *testing.T) {
	tests := []struct {
		env  string
		want bool
	}{
		{"", false},
		{"not-a-pid", false},
		{strconv.Itoa(os.Getppid()), false},
		{strconv.Itoa(os.Getppid() + 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(wire.EnvHostPID, tt.env)
			if got := orphaned(); got != tt.want {
				t.Errorf("orphaned() with %s=%q = %v, want %v", wire.EnvHostPID, tt.env, got, tt.want)
			}
		})
	}
}

func TestInfoHandles(t *testing.T) {
	info := Info{
		Events: []string{EventToolExecuteBefore, EventToolExecuteAfter, EventSessionEnd, EventChatMessage},
		Tools: map[string][]string{
			EventToolExecuteBefore: {ToolWrite, ToolEdit},
			EventToolExecuteAfter:  {},
		},
	}
	tests := []struct {
		event, tool string
		want        bool
	}{
		{EventToolExecuteBefore, ToolWrite, true},
		{EventToolExecuteBefore, ToolEdit, true},
		{EventToolExecuteBefore, ToolBash, false},
		{EventToolExecuteAfter, ToolWrite, false}, // a key with no tools: none
		{EventSessionEnd, "", true},
		{EventChatMessage, ToolBash, true}, // no tool on this event: the tool is ignored
		{EventSessionIdle, "", false},      // not an event the hook handles
	}
	for _, tt := range tests {
		if got := info.Handles(tt.event, tt.tool); got != tt.want {
			t.Errorf("Handles(%q, %q) = %v, want %v", tt.event, tt.tool, got, tt.want)
		}
	}
	every := Info{Events: []string{EventToolExecuteBefore}}
	for _, tool := range ToolNames() {
		if !every.Handles(EventToolExecuteBefore, tool) {
			t.Errorf("a hook without Tools: Handles(before, %q) = false, want true", tool)
		}
	}
}

// Info.Tools crosses the protocol as it was sent: an event with no tools
// stays an event with no tools (none), not a missing key (every tool).
func TestInfoToolsOverTheProtocol(t *testing.T) {
	for _, in := range []Info{
		{Name: "h", Kind: KindHook, Events: []string{EventToolExecuteBefore}},
		{Name: "h", Kind: KindHook, Events: []string{EventToolExecuteBefore, EventToolExecuteAfter},
			Tools: map[string][]string{EventToolExecuteBefore: {ToolBash}, EventToolExecuteAfter: {}}},
	} {
		got := infoFromProto(infoToProto(in))
		if diff := cmp.Diff(in, got); diff != "" {
			t.Errorf("infoFromProto(infoToProto(%+v)) mismatch (-sent +got):\n%s", in, diff)
		}
	}
}

// A hook's block crosses the protocol with the hook's name, both in the
// tool result an agent reads and in the response it gives back, so the
// host can tell a block from a failure.
func TestBlockedByOverTheProtocol(t *testing.T) {
	res := ToolResult{Output: "refused", IsError: true, Denied: true, BlockedBy: "no-rm-rf", Reason: "rm -rf is not allowed"}
	if diff := cmp.Diff(&res, toolResultFromProto(toolResultToProto(&res))); diff != "" {
		t.Errorf("ToolResult mismatch (-sent +got):\n%s", diff)
	}
	resp := AgentResponse{Error: "blocked by no-rm-rf: rm -rf is not allowed", BlockedBy: "no-rm-rf"}
	if diff := cmp.Diff(resp, agentResponseFromProto(agentResponseToProto(resp))); diff != "" {
		t.Errorf("AgentResponse mismatch (-sent +got):\n%s", diff)
	}
}
