package chat

import "github.com/weavehq/weave/host/model"

// WrapProvider replaces the door's provider with f's wrapping of it, so
// that a benchmark outside the package can time the provider apart.
func (d *Door) WrapProvider(f func(model.Provider) model.Provider) { d.set = d.set.Wrap(f) }
