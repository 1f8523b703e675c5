// Package bus is Weave's delivery layer: topics, subscriptions and their
// propagation policies, requests with acknowledgements, retained and
// append-only topics, and retries with dead letters.
package bus
