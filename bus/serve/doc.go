// Package serve is `weave bus serve` as a library: Open serves a bus on the
// faces asked for (the JSON-RPC 2.0 WebSocket face of bus/jsonrpc with its
// /bus/ admin routes, the v1 envelope face of bus/envelope over a Unix
// socket and over HTTP), and one Close tears down everything Open started,
// in reverse.
//
// # Guarantees
//
//   - One token guard. Every face and route checks the bearer token through
//     guard.Authorized. Without a configured token (Options.Token), Open
//     keeps one in a 0600 file (guard.TokenPath) that local weave commands
//     read. Either token guards the /bus/ admin routes always, and the
//     protected topics (hook:, agent:, system:, as the topic table says) of
//     the WebSocket face, where a loopback peer without it joins as a guest
//     that keeps the other topics: no pattern that can match a protected
//     topic, however spelled (bus.PatternMayMatchProtected), and a share of
//     the subscriptions and kept topics all peers share (see bus/jsonrpc),
//     so a guest cannot spend what the host and the envelope face need. On the envelope HTTP face a configured
//     token guards every request; the created one guards the commands that
//     are not reads. The Unix socket's mode (0600) is its access control.
//   - Loopback only without a configured token: Open refuses a WebSocket
//     or HTTP face beyond loopback without one (*TokenError) before it
//     starts anything.
//   - One HTTP policy. Every TCP face is served through guard.Harden: same
//     origin, loopback Host names, header and body deadlines, idle
//     timeouts and the connection cap (bus.max_connections), of which peers
//     without the token hold at most their share: WebSocket connections
//     and envelope event streams (bus.max_guest_connections, half unless
//     set).
//   - The default handler (Options.AgentCommand) never starts an agent on
//     the topics the topic table keeps from it (bus.MayLaunch); with it on,
//     the oldest subscriptions on the host's topics there answer "not
//     processed".
//   - Open returns once every face listens; on an error it tears down what
//     it had started. Close stops the faces in the reverse order Open
//     started them and never closes the bus, which stays the caller's.
package serve
