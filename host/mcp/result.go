package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weavehq/weave/plugins"
)

// convert turns a server's result into the text a model reads: text as it
// is, an image or audio as a note with its type and size (the providers'
// tool results carry text), a resource as its text or a note, structured
// content as JSON when the server gave no text for it.
func convert(r *sdk.CallToolResult) plugins.ToolResult {
	var parts []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes, not played]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name))
		case *sdk.EmbeddedResource:
			parts = append(parts, resourceText(c.Resource))
		default:
			raw, _ := json.Marshal(c)
			parts = append(parts, string(raw))
		}
	}
	if r.StructuredContent != nil && len(parts) == 0 {
		raw, err := json.MarshalIndent(r.StructuredContent, "", "  ")
		if err == nil {
			parts = append(parts, string(raw))
		}
	}
	return plugins.ToolResult{Output: strings.Join(parts, "\n"), IsError: r.IsError}
}

func resourceText(rc *sdk.ResourceContents) string {
	if rc == nil {
		return "[resource]"
	}
	if rc.Text != "" {
		return rc.Text
	}
	return fmt.Sprintf("[resource: %s, %s, %d bytes, not shown]", rc.URI, orUnknown(rc.MIMEType), len(rc.Blob))
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}
