package mcp

import (
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseTransport is the transport of a server on the older HTTP+SSE
// transport (protocol version 2024-11-05), its headers on every request.
func (m *Manager) sseTransport(s Spec) (sdk.Transport, error) {
	client, url, err := m.httpClient(s)
	if err != nil {
		return nil, err
	}
	return &sdk.SSEClientTransport{Endpoint: url, HTTPClient: client}, nil
}
