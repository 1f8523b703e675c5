package workers

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Lease is the durable record of an award: which worker holds which task
// under which award id, and when it was last heard of. The coordinator
// alone writes leases; a worker renews its own by heartbeat.
type Lease struct {
	Key       string `json:"key"`
	Run       string `json:"run"`
	Task      int    `json:"task"`
	Award     string `json:"award"`
	AttemptID string `json:"attempt_id"`
	Worker    string `json:"worker"`
	Base      string `json:"base"`
	// Basis is the assignment's (Assignment.Basis): base-<Base>-<Basis>
	// is in the bundle store while the lease lasts.
	Basis  string `json:"basis,omitempty"`
	Branch string `json:"branch"`
	// Digest is the offer's (Offer.Digest): the worker runs only the task
	// its lease names.
	Digest string `json:"digest"`
	// TokenHash is TokenHash of the award's token.
	TokenHash string    `json:"token_hash"`
	Granted   time.Time `json:"granted"`
	Heartbeat time.Time `json:"heartbeat"`
}

// Expired reports whether l was last heard of more than ttl before now.
func (l Lease) Expired(now time.Time, ttl time.Duration) bool {
	return now.Sub(l.Heartbeat) > ttl
}

// Leases is the lease bucket.
type Leases struct {
	kv jetstream.KeyValue
}

// OpenLeases opens the lease bucket, creating it when missing.
func OpenLeases(ctx context.Context, js jetstream.JetStream) (*Leases, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      LeaseBucket,
		Description: "weave: tasks awarded to workers",
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", LeaseBucket, err)
	}
	return &Leases{kv: kv}, nil
}

// ErrNoLease says a task has no lease, or a lease of another award or
// worker than the one asked about.
var ErrNoLease = errors.New("no lease")

// Get returns the lease on key and its revision.
func (ls *Leases) Get(ctx context.Context, key string) (Lease, uint64, error) {
	e, err := ls.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Lease{}, 0, fmt.Errorf("task %s: %w", key, ErrNoLease)
	}
	if err != nil {
		return Lease{}, 0, fmt.Errorf("read the lease of task %s: %w", key, err)
	}
	var l Lease
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return Lease{}, 0, fmt.Errorf("read the lease of task %s: %w", key, err)
	}
	return l, e.Revision(), nil
}

// Grant records l, replacing any earlier lease on its key: the earlier
// award is lost from this moment. It returns the lease's revision.
func (ls *Leases) Grant(ctx context.Context, l Lease) (uint64, error) {
	data, err := json.Marshal(l)
	if err != nil {
		return 0, err
	}
	rev, err := ls.kv.Put(ctx, l.Key, data)
	if err != nil {
		return 0, fmt.Errorf("record the award of task %s to %s: %w", l.Key, l.Worker, err)
	}
	return rev, nil
}

// Holds checks that worker holds the lease on key under award and returns
// it with its revision.
func (ls *Leases) Holds(ctx context.Context, key, award, worker string) (Lease, uint64, error) {
	l, rev, err := ls.Get(ctx, key)
	if err != nil {
		return l, rev, err
	}
	if l.Award != award || l.Worker != worker {
		return l, rev, fmt.Errorf("task %s: %w for award %s of %s (it is %s's, award %s)", key, ErrNoLease, award, worker, l.Worker, l.Award)
	}
	return l, rev, nil
}

// Proves is Holds, and the token is the award's.
func (ls *Leases) Proves(ctx context.Context, key, award, worker, token string) (Lease, uint64, error) {
	l, rev, err := ls.Holds(ctx, key, award, worker)
	if err != nil {
		return l, rev, err
	}
	if subtle.ConstantTimeCompare([]byte(TokenHash(token)), []byte(l.TokenHash)) != 1 {
		return l, rev, fmt.Errorf("task %s: %w: the award's token is wrong", key, ErrNoLease)
	}
	return l, rev, nil
}

// Renew moves the heartbeat of the lease on key, held by worker under
// award with its token, to now: a compare-and-swap on the revision read, so a renewal
// never revives a lease lost meanwhile. It returns the lease's new
// revision.
func (ls *Leases) Renew(ctx context.Context, key, award, worker, token string, now time.Time) (uint64, error) {
	l, rev, err := ls.Proves(ctx, key, award, worker, token)
	if err != nil {
		return 0, err
	}
	l.Heartbeat = now
	data, err := json.Marshal(l)
	if err != nil {
		return 0, err
	}
	rev, err = ls.kv.Update(ctx, key, data, rev)
	if err != nil {
		return 0, fmt.Errorf("renew the lease of task %s: %w", key, err)
	}
	return rev, nil
}

// Release removes the lease on key when it is still award's.
func (ls *Leases) Release(ctx context.Context, key, award string) error {
	l, rev, err := ls.Get(ctx, key)
	if errors.Is(err, ErrNoLease) {
		return nil
	}
	if err != nil {
		return err
	}
	if l.Award != award {
		return nil
	}
	if err := ls.kv.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil {
		return fmt.Errorf("release the lease of task %s: %w", key, err)
	}
	return nil
}

// releaseAt removes the lease on key of award, written last at revision
// rev as far as the caller knows: one round trip where Release takes two.
// A lease written since (renewed, or another award's) is judged as Release
// judges it.
func (ls *Leases) releaseAt(ctx context.Context, key, award string, rev uint64) error {
	if rev != 0 {
		if err := ls.kv.Delete(ctx, key, jetstream.LastRevision(rev)); err == nil {
			return nil
		}
	}
	return ls.Release(ctx, key, award)
}

// All returns every lease, for a coordinator that resumes a run.
func (ls *Leases) All(ctx context.Context) ([]Lease, error) {
	keys, err := ls.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list bucket %s: %w", LeaseBucket, err)
	}
	var out []Lease
	for k := range keys.Keys() {
		l, _, err := ls.Get(ctx, k)
		if err == nil {
			out = append(out, l)
		}
	}
	return out, nil
}

// OfRun returns the leases of run's tasks.
func (ls *Leases) OfRun(ctx context.Context, run string) ([]Lease, error) {
	keys, err := ls.kv.ListKeysFiltered(ctx, keyToken(run)+".*")
	if err != nil {
		return nil, fmt.Errorf("list the leases of run %s: %w", run, err)
	}
	var out []Lease
	for k := range keys.Keys() {
		l, _, err := ls.Get(ctx, k)
		if err == nil && l.Run == run {
			out = append(out, l)
		}
	}
	return out, nil
}
