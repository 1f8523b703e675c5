package bus_test

import (
	"testing"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
)

func TestMemoryConformance(t *testing.T) {
	bustest.Run(t, func(t *testing.T, opts bus.Options) bus.Bus {
		b, err := bus.NewMemory(opts)
		if err != nil {
			t.Fatalf("NewMemory: %v", err)
		}
		return b
	})
}
