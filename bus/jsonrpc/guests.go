package jsonrpc

import (
	"hash/maphash"
	"sync"

	"github.com/weavehq/weave/bus"
)

// A peer without the token (a guest, on a loopback server with one) may
// send on every topic but the protected ones, and a message on a retained
// or append-only topic makes the bus keep that topic until it is forgotten,
// counted against bus.max_topics. Unbounded, one guest sending on issue:1,
// issue:2, ... fills the bus, and the host and the envelope face can no
// longer keep their own topics (a session.create then fails). So guests get
// a share: each connection Options.MaxGuestTopicsPerConnection new kept
// topics, and all guests together Options.MaxGuestTopics over the life of
// the server, since a kept topic outlives the connection that made it and a
// guest may reconnect. Peers with the token are not counted: they already
// answer hooks.

// guestTopics is the kept topics that guests have sent on, by hash: a
// fixed cost per topic whatever its length.
type guestTopics struct {
	keep bus.Options // which topics the bus keeps
	seed maphash.Seed

	mu   sync.Mutex
	seen map[uint64]struct{}
}

func newGuestTopics(keep bus.Options) guestTopics {
	return guestTopics{keep: keep, seed: maphash.MakeSeed(), seen: make(map[uint64]struct{})}
}

// busOptions returns b's options when it tells them (the memory and nats
// backends do), else the defaults, which keep the topic table's topics.
func busOptions(b bus.Bus) bus.Options {
	if o, ok := b.(interface{ Options() bus.Options }); ok {
		return o.Options().WithDefaults()
	}
	return bus.DefaultOptions()
}

// spendTopic counts a guest connection's message on topic against its
// share of the kept topics, and refuses it once a new kept topic would
// pass the connection's or all guests' share.
func (c *conn) spendTopic(topic string) *Error {
	g := &c.s.guests
	if !g.keep.Keeps(topic) {
		return nil
	}
	h := maphash.String(g.seed, topic)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.topics[h]; ok {
		return nil
	}
	if n := c.s.opts.MaxGuestTopicsPerConnection; len(c.topics) >= n {
		return errorf(CodeLimit, "limit of %d retained and append-only topics per connection without the bus token reached (a tenth of bus.max_topics): send on topics this connection already used, or connect with %s", n, c.s.tokenWhere())
	}
	g.mu.Lock()
	if _, ok := g.seen[h]; !ok {
		if n := c.s.opts.MaxGuestTopics; len(g.seen) >= n {
			g.mu.Unlock()
			return errorf(CodeLimit, "peers without the bus token have used their limit of %d retained and append-only topics (a quarter of bus.max_topics, the rest kept for the host): send on topics already used, connect with %s, or raise bus.max_topics", n, c.s.tokenWhere())
		}
		g.seen[h] = struct{}{}
	}
	g.mu.Unlock()
	if c.topics == nil {
		c.topics = make(map[uint64]struct{})
	}
	c.topics[h] = struct{}{}
	return nil
}
