package model_test

import (
	"os"
	"strings"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/host/model"
	"github.com/weavehq/weave/plugins"
)

// TestRealProviderSmoke asks a real provider one streamed question with one
// tool offered. It runs only when the provider's key is set (and talks to
// the network then); otherwise it skips and says so.
func TestRealProviderSmoke(t *testing.T) {
	cases := []struct{ provider, keyEnv, modelEnv, def string }{
		{"openai", "OPENAI_API_KEY", "WEAVE_SMOKE_OPENAI_MODEL", "gpt-4.1-mini"},
		{"anthropic", "ANTHROPIC_API_KEY", "WEAVE_SMOKE_ANTHROPIC_MODEL", "claude-haiku-4-5"},
	}
	for _, c := range cases {
		t.Run(c.provider, func(t *testing.T) {
			if os.Getenv(c.keyEnv) == "" {
				t.Skipf("%s is not set: skipping the smoke test against the real %s API", c.keyEnv, c.provider)
			}
			name := os.Getenv(c.modelEnv)
			if name == "" {
				name = c.def
			}
			p, err := model.Open(config.ModelConfig{Provider: c.provider, Name: name}, os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			var streamed strings.Builder
			resp, err := p.Complete(t.Context(), plugins.ChatRequest{
				System:   "Answer in one word.",
				Messages: []plugins.ChatMessage{{Role: plugins.RoleUser, Content: "What colour is a clear daytime sky?"}},
				Tools:    []plugins.ToolSpec{{Name: "glob", Description: "List files", Schema: []byte(`{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}`)}},
			}, func(d model.Delta) { streamed.WriteString(d.Text) })
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage.InputTokens == 0 || streamed.String() != resp.Message.Content {
				t.Errorf("response %+v, streamed %q: want usage and the streamed text equal to the answer", resp, streamed.String())
			}
		})
	}
}
