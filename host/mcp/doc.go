// Package mcp is the host's MCP client: it connects to the MCP servers of
// config (mcp_servers) and of a project's .mcp.json (Claude Code's format),
// and offers their tools to the agents as mcp__<server>__<tool>. It is
// built on the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// # What it guarantees
//
//   - A stdio server (stdio.go) runs in its own process group, started
//     through the host's proc.Set, so that it is stopped with the run and
//     nothing it started outlives it. Its environment is a command hook's
//     (the person's, less weave's own credentials and the model's key)
//     plus the entry's env. Values may name environment variables as
//     ${VAR} or ${VAR:-default}; they are read when the server starts,
//     passed to the server alone, and never written under .weave/. A
//     reference to one of weave's own credentials is refused.
//   - A Streamable HTTP server (http.go) or an SSE server (sse.go) gets the
//     entry's headers, expanded the same way, on every request.
//   - Every call reaches this package only through the host's tool door
//     (host/tools): the capability gate (which servers a role may use,
//     agents.<name>.mcp) and the tool hooks come first, and the result is
//     capped as any tool's. Here a result becomes text (result.go): text
//     as is, an image or audio as a short note with its type and size,
//     structured content as JSON.
//   - A server that dies is restarted with backoff (manager.go); a call in
//     flight fails with a message naming the server, and a call made while
//     it restarts waits for it, within the call's context, or fails naming
//     it. A server that cannot be started is left out (its tools are not
//     offered) and said so by Status; the run goes on.
//   - Past a budget (DeferTools tools, or a tenth of the context window),
//     tool definitions are not offered at once: the model gets
//     mcp_tool_search (search.go), which answers the matching tools'
//     names, descriptions and schemas and makes them callable from the
//     next request of that agent in that session.
//
// A Manager is safe for concurrent use.
package mcp
