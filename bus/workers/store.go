package workers

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weavehq/weave/internal/gitwork"
)

// Store keeps code bundles and task logs in JetStream's object store, so
// that a worker needs no shared file system and no git server.
type Store struct {
	obs jetstream.ObjectStore
}

// OpenStore opens the bundle store, creating it when missing.
func OpenStore(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      BundleStore,
		Description: "weave: code bundles and logs of tasks run by workers",
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("open object store %s: %w", BundleStore, err)
	}
	return &Store{obs: obs}, nil
}

// PutCommit stores under name a bundle of tip over basis ("" for the whole
// history), unless name is stored already: bundles are named after what
// they hold, so one stored is never stale.
func (s *Store) PutCommit(ctx context.Context, repo *gitwork.Repo, name, tip, basis string) error {
	if _, err := s.obs.GetInfo(ctx, name); err == nil {
		return nil
	}
	var buf bytes.Buffer
	if err := repo.Bundle(ctx, &buf, tip, basis); err != nil {
		return err
	}
	return s.Put(ctx, name, buf.Bytes())
}

// FetchCommit fetches the bundle stored under name into repo, pointing ref
// at its tip, which it returns.
func (s *Store) FetchCommit(ctx context.Context, repo *gitwork.Repo, name, ref string) (string, error) {
	data, err := s.Get(ctx, name)
	if err != nil {
		return "", err
	}
	return repo.FetchBundle(ctx, bytes.NewReader(data), ref)
}

// UnpackCommit writes the objects of the bundle stored under name into
// repo, checked, and returns its tip; no ref moves (gitwork.UnpackBundle).
func (s *Store) UnpackCommit(ctx context.Context, repo *gitwork.Repo, name string) (string, error) {
	data, err := s.Get(ctx, name)
	if err != nil {
		return "", err
	}
	return repo.UnpackBundle(ctx, data)
}

// Put stores data under name, replacing what was there.
func (s *Store) Put(ctx context.Context, name string, data []byte) error {
	if _, err := s.obs.PutBytes(ctx, name, data); err != nil {
		return fmt.Errorf("store %s in %s: %w", name, BundleStore, err)
	}
	return nil
}

// ErrMissing says the store holds nothing under a name.
var ErrMissing = errors.New("not in the bundle store")

// Get reads what is stored under name.
func (s *Store) Get(ctx context.Context, name string) ([]byte, error) {
	data, err := s.obs.GetBytes(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("read %s: %w", name, ErrMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", name, BundleStore, err)
	}
	return data, nil
}

// Delete removes what is stored under name; a missing name is no error.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := s.obs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("delete %s from %s: %w", name, BundleStore, err)
	}
	return nil
}
