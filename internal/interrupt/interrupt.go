// Package interrupt wakes a read or write blocked on a socket when a
// context ends, through the socket's deadline, and leaves the socket as it
// was for whoever uses it next: a client whose callers read their own
// replies gives up a read without closing the connection under the others.
package interrupt

import (
	"context"
	"time"
)

// aLongTimeAgo is a deadline in the past: it wakes a blocked read or write
// at once.
var aLongTimeAgo = time.Unix(1, 0)

// OnDone sets a past deadline with set (a net.Conn's SetReadDeadline or
// SetWriteDeadline) when ctx ends, waking the read or write in progress.
// The function it returns must be called once that read or write is over:
// it stops the watch and, if the deadline was set, clears it, so that a
// ctx ending later never touches the next user's reads.
func OnDone(ctx context.Context, set func(time.Time) error) (restore func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = set(aLongTimeAgo)
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired
			_ = set(time.Time{})
		}
	}
}
