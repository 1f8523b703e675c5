package hooks

import (
	"errors"

	"github.com/weavehq/weave/plugins"
)

// projectDir picks the project directory of an event: the event's own, else
// the configured one.
func projectDir(ev plugins.Event, configured string) (string, error) {
	if ev.Cwd != "" {
		return ev.Cwd, nil
	}
	if configured != "" {
		return configured, nil
	}
	return "", errors.New("the event has no cwd and no project directory is configured")
}
