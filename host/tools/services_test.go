package tools

import (
	"context"
	"errors"
	"testing"

	"github.com/weavehq/weave/plugins"
)

func TestServicesWithoutParts(t *testing.T) {
	empty := &Services{}
	ctx := context.Background()
	res, err := empty.CallTool(ctx, plugins.ToolCall{Tool: "write"})
	if err != nil || !res.Denied || !res.IsError {
		t.Errorf("CallTool without ToolFunc = %+v, %v; want a denied result", res, err)
	}
	if _, err := empty.Complete(ctx, plugins.ChatRequest{}); !errors.Is(err, plugins.ErrNoModel) {
		t.Errorf("Complete without ModelFunc: error = %v, want ErrNoModel", err)
	}
}
