package natsbus

import "github.com/nats-io/nats.go/jetstream"

// JetStream is the bus's JetStream context, on the bus's one connection
// (which reconnects by itself), for callers that keep buckets or objects of
// their own beside the bus's: the leases, the worker registry and the code
// bundles of a run with remote workers (bus/workers).
func (b *Bus) JetStream() jetstream.JetStream { return b.js }
