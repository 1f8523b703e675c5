package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Info is what a worker says of itself in the registry.
type Info struct {
	Name string `json:"name"`
	// Labels are what it offers (gpu, os=linux); Categories and Models
	// what it can run (none means any).
	Labels     []string `json:"labels,omitempty"`
	Categories []string `json:"categories,omitempty"`
	Models     []string `json:"models,omitempty"`
	// Slots is how many tasks it runs at once.
	Slots int `json:"slots"`
	// Tasks are the keys of the tasks it runs now.
	Tasks     []string  `json:"tasks,omitempty"`
	Heartbeat time.Time `json:"heartbeat"`
}

// Registry is the bucket of connected workers. Each worker writes its own
// entry on every heartbeat and deletes it when it leaves; entries not
// renewed for the bucket's MaxAge vanish by themselves.
type Registry struct {
	kv jetstream.KeyValue
}

// registryAge is how long an entry lives without being renewed: a worker
// killed without leaving disappears from `weave workers` after it.
const registryAge = time.Minute

// OpenRegistry opens the worker registry, creating it when missing.
func OpenRegistry(ctx context.Context, js jetstream.JetStream) (*Registry, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      WorkerBucket,
		Description: "weave: connected workers",
		Storage:     jetstream.FileStorage,
		TTL:         registryAge,
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", WorkerBucket, err)
	}
	return &Registry{kv: kv}, nil
}

// Announce writes info as the worker's entry.
func (r *Registry) Announce(ctx context.Context, info Info) error {
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	if _, err := r.kv.Put(ctx, keyToken(info.Name), data); err != nil {
		return fmt.Errorf("announce worker %s: %w", info.Name, err)
	}
	return nil
}

// Leave removes the worker's entry.
func (r *Registry) Leave(ctx context.Context, name string) error {
	if err := r.kv.Delete(ctx, keyToken(name)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("remove worker %s: %w", name, err)
	}
	return nil
}

// List returns the workers in the registry, by name.
func (r *Registry) List(ctx context.Context) ([]Info, error) {
	keys, err := r.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list bucket %s: %w", WorkerBucket, err)
	}
	var out []Info
	for k := range keys.Keys() {
		e, err := r.kv.Get(ctx, k)
		if err != nil {
			continue // left or expired since it was listed
		}
		var in Info
		if json.Unmarshal(e.Value(), &in) == nil {
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
