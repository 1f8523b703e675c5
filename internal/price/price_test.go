package price

import (
	"math"
	"testing"

	"github.com/weavehq/weave/plugins"
)

func TestLookup(t *testing.T) {
	tab := NewTable(map[string]Price{"my-local": {Input: 0, Output: 0, CacheRead: 0, CacheWrite: 0}, "gpt-4.1": {Input: 1, Output: Unknown, CacheRead: Unknown, CacheWrite: Unknown}})
	for _, tc := range []struct {
		name string
		want float64 // input price; -2: not found
	}{
		{"claude-sonnet-4-5", 3},
		{"claude-sonnet-4-5-20250929", 3},
		{"claude-sonnet-4-5@20250929", 3},
		{"anthropic/claude-sonnet-4-5", 3},
		{"models/gemini-2.5-pro", 1.25},
		{"gpt-4.1", 1},
		{"gpt-4.1-2025-04-14", 1},
		{"gpt-4.1-mini", 0.4},
		{"claude-opus-4-9", -2},
		{"my-local", 0},
		{"fake", -2},
		{"", -2},
	} {
		p, ok := tab.Lookup(tc.name)
		got := p.Input
		if !ok {
			got = -2
		}
		if got != tc.want {
			t.Errorf("Lookup(%q) input = %v, want %v", tc.name, got, tc.want)
		}
	}
	if p, _ := tab.Lookup("gpt-4.1"); p.Output != 8 {
		t.Errorf("an override's unset output = %v, want the default's 8", p.Output)
	}
}

func TestCost(t *testing.T) {
	p := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	u := plugins.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 200_000, CacheWriteTokens: 10_000}
	got, ok := p.Cost(u, false)
	want := 3 + 1.5 + 0.06 + 0.0375
	if !ok || math.Abs(got-want) > 1e-9 {
		t.Errorf("Cost = %v, %v; want %v", got, ok, want)
	}
	// The OpenAI wire counts cache reads inside the input.
	got, _ = p.Cost(u, true)
	want = 0.8*3 + 1.5 + 0.06 + 0.0375
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("Cost(inputHoldsCache) = %v, want %v", got, want)
	}
	noCache := Price{Input: 1, Output: 2, CacheRead: Unknown, CacheWrite: Unknown}
	if _, ok := noCache.Cost(u, false); ok {
		t.Error("Cost with cache tokens of unknown price is known; want unknown")
	}
	if c, ok := noCache.Cost(plugins.Usage{InputTokens: 10, OutputTokens: 10}, false); !ok || c == 0 {
		t.Errorf("Cost without cache tokens = %v, %v; want known", c, ok)
	}
	if w, ok := p.Worst(1000, 8192); !ok || math.Abs(w-(1000*3.75+8192*15)/1e6) > 1e-12 {
		t.Errorf("Worst = %v, %v", w, ok)
	}
	if _, ok := (Price{Input: Unknown, Output: 1}).Worst(1, 1); ok {
		t.Error("Worst with an unknown input price is known")
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		usd   float64
		known bool
		want  string
	}{{0.01234, true, "$0.0123"}, {12.345, true, "$12.35"}, {0, true, "$0.0000"}, {5, false, "?"}} {
		if got := Format(tc.usd, tc.known); got != tc.want {
			t.Errorf("Format(%v, %v) = %q, want %q", tc.usd, tc.known, got, tc.want)
		}
	}
}
