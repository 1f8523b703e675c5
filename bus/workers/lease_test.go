package workers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/bus/natsbus"
)

// TestReleaseAtTheRevisionWritten: the coordinator releases a lease at the
// revision it last wrote, in one round trip; a lease written since by a
// renewal is still released, and another award's lease never is.
func TestReleaseAtTheRevisionWritten(t *testing.T) {
	ns := bustest.StartNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := natsbus.New(ctx, ns.URL(), bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ls, err := OpenLeases(ctx, b.JetStream())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	grant := func(key, award string) uint64 {
		rev, err := ls.Grant(ctx, Lease{Key: key, Award: award, Worker: "w", TokenHash: TokenHash("tok"), Granted: now, Heartbeat: now})
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	gone := func(key string) bool {
		_, _, err := ls.Get(ctx, key)
		return errors.Is(err, ErrNoLease)
	}
	// As written.
	rev := grant("p.1", "a1")
	if err := ls.releaseAt(ctx, "p.1", "a1", rev); err != nil || !gone("p.1") {
		t.Fatalf("release at the revision written: %v, gone %v", err, gone("p.1"))
	}
	// Renewed since, the revision unknown to the caller.
	rev = grant("p.2", "a2")
	if _, err := ls.Renew(ctx, "p.2", "a2", "w", "tok", now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := ls.releaseAt(ctx, "p.2", "a2", rev); err != nil || !gone("p.2") {
		t.Fatalf("release of a lease renewed since: %v, gone %v", err, gone("p.2"))
	}
	// Another award's since: it stays.
	rev = grant("p.3", "a3")
	grant("p.3", "a4")
	if err := ls.releaseAt(ctx, "p.3", "a3", rev); err != nil || gone("p.3") {
		t.Fatalf("release of a lease another award took: %v, gone %v", err, gone("p.3"))
	}
	if l, _, err := ls.Get(ctx, "p.3"); err != nil || l.Award != "a4" {
		t.Fatalf("lease of p.3: %+v, %v; want award a4's", l, err)
	}
}
