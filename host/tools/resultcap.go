package tools

import (
	"github.com/weavehq/weave/internal/textcap"
	"github.com/weavehq/weave/plugins"
)

// MaxResultBytes bounds the output of one tool call as the model and the
// agent get it, whatever the tool (a bash command whose
// tools.bash.max_output_bytes is set higher, a read, a plugin's tool): a
// longer output keeps its start and its end, where a command says how it
// ended, with a note between them saying how much was cut. Several results
// together still fit a plugin message (plugins' wire limit is far above).
const MaxResultBytes = 2 << 20

// capResult cuts res's output and reason to MaxResultBytes.
func capResult(res plugins.ToolResult) plugins.ToolResult {
	res.Output = textcap.HeadTail(res.Output, MaxResultBytes, "tool output")
	res.Reason = textcap.HeadTail(res.Reason, MaxResultBytes, "reason")
	return res
}
