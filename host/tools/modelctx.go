package tools

import "context"

// WithModelContext has every model call made through the tools' services,
// an agent's and a delegated agent's alike, carry what with adds to its
// context. A worker's task working on a coordinator's code says so this
// way, so that the model door gives its calls the instructions of that
// code rather than the worker project's; the tools are made for one task
// (At), so the calls of no other task carry it.
func WithModelContext(with func(context.Context) context.Context) Option {
	return func(t *Tools) { t.modelCtx = with }
}
