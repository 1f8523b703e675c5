package guard_test

import (
	"testing"

	"github.com/weavehq/weave/bus/guard"
)

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:7892", true},
		{"[::1]:7892", true},
		{"localhost:7892", true},
		{"127.0.0.2:1", true},
		{":7892", false},
		{"0.0.0.0:7892", false},
		{"192.168.1.5:7892", false},
		{"example.com:80", false},
	}
	for _, tt := range tests {
		if got := guard.IsLoopback(tt.addr); got != tt.want {
			t.Errorf("IsLoopback(%q) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}
