package plugins

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	pb "github.com/weavehq/weave/plugins/internal/proto/weave/v1"
)

func TestArgsThatAreNotUTF8CrossByteExact(t *testing.T) {
	args := map[string]any{
		"command": "printf 'a\xe9b'",
		"plain":   "café",
		"nested":  map[string]any{"list": []any{"ok", "x\xffy"}, "a/b~c": "\xc3"},
	}
	pc, err := toolCallToProto(ToolCall{Tool: ToolBash, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	wire, err := proto.Marshal(pc)
	if err != nil {
		t.Fatalf("proto.Marshal: %v", err)
	}
	var back pb.ToolCall
	if err := proto.Unmarshal(wire, &back); err != nil {
		t.Fatal(err)
	}
	got, err := toolCallFromProto(&back)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(args, got.Args); diff != "" {
		t.Errorf("args after the round trip (-sent +got):\n%s", diff)
	}
	if _, ok := args[rawStringsKey]; ok {
		t.Error("encoding added the reserved key to the caller's map")
	}
}

func TestTextThatIsNotUTF8NeverFailsAMessage(t *testing.T) {
	req, err := agentRequestToProto(1, AgentRequest{Prompt: "Carry out caf\xe9", Task: &TaskRef{Number: 1, Title: "Caf\xe9"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proto.Marshal(req); err != nil {
		t.Fatalf("proto.Marshal(request with a Latin-1 title) = %v, want it sent", err)
	}
	if got := req.GetTask().GetTitle(); got != "Caf\uFFFD" {
		t.Errorf("title on the wire = %q, want %q", got, "Caf\uFFFD")
	}
	res := toolResultToProto(&ToolResult{Output: "raw \xff output"})
	if _, err := proto.Marshal(res); err != nil {
		t.Fatalf("proto.Marshal(tool output with a raw byte) = %v", err)
	}
}
