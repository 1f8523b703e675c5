package config

import (
	"fmt"
	"maps"
	"slices"

	yaml "go.yaml.in/yaml/v3"
)

// PriceConfig is one model's price under prices:, in US dollars per million
// tokens; a nil field keeps the default price for that model (unknown for a
// model without one).
type PriceConfig struct {
	Input      *float64
	Output     *float64
	CacheRead  *float64
	CacheWrite *float64
}

// BudgetConfig holds the budgets that pause a run, in US dollars; 0 means
// none.
type BudgetConfig struct {
	// Run bounds what one run spends on models, resumes included.
	Run float64 `mapstructure:"run"`
	// Plan bounds what a plan's tasks spend, across its runs.
	Plan float64 `mapstructure:"plan"`
	// Task bounds what one task spends (a [budget: $N] tag sets its own).
	Task float64 `mapstructure:"task"`
}

var priceFields = []field{
	{name: "input", kind: KindFloat, check: dollars},
	{name: "output", kind: KindFloat, check: dollars},
	{name: "cache_read", kind: KindFloat, check: dollars},
	{name: "cache_write", kind: KindFloat, check: dollars},
}

// dollars checks an amount of money: not negative.
func dollars(v any) string {
	if f := v.(float64); f < 0 {
		return fmt.Sprintf("%v is negative; want 0 or more (US dollars)", f)
	}
	return ""
}

// applyPrices turns the merged prices: fields into c.Prices.
func applyPrices(c *Config, prices map[string]map[string]any) {
	c.Prices = make(map[string]PriceConfig, len(prices))
	for name, f := range prices {
		c.Prices[name] = PriceConfig{Input: floatPtr(f["input"]), Output: floatPtr(f["output"]),
			CacheRead: floatPtr(f["cache_read"]), CacheWrite: floatPtr(f["cache_write"])}
	}
}

func (r renderer) prices(prices map[string]PriceConfig) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range slices.Sorted(maps.Keys(prices)) {
		p, key := prices[name], "prices."+name
		e := &yaml.Node{Kind: yaml.MappingNode}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"input", p.Input}, {"output", p.Output}, {"cache_read", p.CacheRead}, {"cache_write", p.CacheWrite}} {
			if f.v != nil {
				r.field(e, key, f.name, *f.v)
			}
		}
		m.Content = append(m.Content, keyNode(name), r.emptyOr(e, key))
	}
	return r.emptyOr(m, "prices")
}
