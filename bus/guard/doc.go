// Package guard is the boundary of the bus faces: the one bearer-token
// check every face and route asks (Authorized, Require), where a local bus
// keeps its token (TokenPath, ReadTokenFile, LoadOrCreateToken), and the
// HTTP policy every face's listener gets (Harden: same origin, loopback
// rules, limits; its doc comment states the policy).
//
// # Guarantees
//
//   - One check. A request carries the token when, and only when,
//     Authorized says so; the comparison takes the same time whatever was
//     sent. The JSON-RPC WebSocket, its /bus/ admin routes and the v1
//     envelope face over HTTP all ask it; what a face does with a request
//     without the token (refuse it, or let it read) is the face's policy,
//     written in its package.
//   - A token file is a regular file only its owner can read, never read
//     or written through a symlink; a file others could read is refused
//     with the chmod that fixes it.
//   - A listener beyond loopback is never served without a token by the
//     faces or by bus/serve; Harden refuses browser pages of other sites
//     and cuts off slow or surplus clients.
//
// guard imports nothing of the project, so both faces and bus/serve, which
// serves them, import it.
package guard
