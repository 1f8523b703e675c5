// Package jsonrpctest serves a bus over the JSON-RPC WebSocket face for
// tests, as `weave bus serve --ws` runs it: a memory bus, the face on
// 127.0.0.1 and the admin routes under /bus/ beside it, all closed when the
// test ends. It is for tests only; nothing in weave imports it.
package jsonrpctest
