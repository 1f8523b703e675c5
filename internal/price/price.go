package price

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"strings"

	"github.com/weavehq/weave/plugins"
)

// Unknown marks a kind of token whose price is not known.
const Unknown = -1.0

// Price is what a model charges, in US dollars per million tokens of each
// kind; a negative value (Unknown) is not known.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
}

// perToken is a price per million tokens applied to n tokens.
func perToken(n int64, perMillion float64) float64 {
	return float64(n) * perMillion / 1e6
}

// Cost is what usage u cost at p. inputHoldsCache says the input count
// includes the cache reads (the OpenAI wire). It is false when tokens of a
// kind whose price is unknown were used.
func (p Price) Cost(u plugins.Usage, inputHoldsCache bool) (float64, bool) {
	in := u.InputTokens
	if inputHoldsCache {
		in = max(in-u.CacheReadTokens, 0)
	}
	var sum float64
	for _, part := range []struct {
		n     int64
		price float64
	}{{in, p.Input}, {u.OutputTokens, p.Output}, {u.CacheReadTokens, p.CacheRead}, {u.CacheWriteTokens, p.CacheWrite}} {
		if part.n <= 0 {
			continue
		}
		if part.price < 0 {
			return 0, false
		}
		sum += perToken(part.n, part.price)
	}
	return Round(sum), true
}

// Round drops what float arithmetic adds below a billionth of a dollar
// (0.6000000000000001), so that figures print as they were reckoned.
func Round(usd float64) float64 {
	return math.Round(usd*1e9) / 1e9
}

// Worst is the most a call of input tokens and an answer of at most
// maxTokens can cost at p: each input token priced at the dearer of input
// and cache write, the whole answer as output. It is false when the input
// or output price is unknown.
func (p Price) Worst(input, maxTokens int64) (float64, bool) {
	if p.Input < 0 || p.Output < 0 {
		return 0, false
	}
	return perToken(input, max(p.Input, p.CacheWrite)) + perToken(maxTokens, p.Output), true
}

// Table finds models' prices: overrides by exact name first, then the
// defaults.
type Table struct {
	over     map[string]Price
	defaults map[string]Price
}

// NewTable is the table of the defaults with overrides laid over them: an
// override's kinds left Unknown keep the default's price for the same name.
func NewTable(overrides map[string]Price) Table {
	t := Table{over: map[string]Price{}, defaults: Defaults()}
	for name, p := range overrides {
		key := strings.ToLower(strings.TrimSpace(name))
		if d, ok := t.lookupDefault(key); ok {
			p = merge(p, d)
		}
		t.over[key] = p
	}
	return t
}

// merge fills the unknown kinds of p from d.
func merge(p, d Price) Price {
	fill := func(v *float64, from float64) {
		if *v < 0 {
			*v = from
		}
	}
	fill(&p.Input, d.Input)
	fill(&p.Output, d.Output)
	fill(&p.CacheRead, d.CacheRead)
	fill(&p.CacheWrite, d.CacheWrite)
	return p
}

// snapshot matches what providers append to a model's name for a dated or
// moving version of it.
var snapshot = regexp.MustCompile(`(-\d{8}|-\d{4}-\d{2}-\d{2}|@\d{8}|-latest)$`)

// Lookup is model's price; false when the table does not know it.
func (t Table) Lookup(model string) (Price, bool) {
	key := strings.ToLower(strings.TrimSpace(model))
	if key == "" {
		return Price{}, false
	}
	for _, k := range candidates(key) {
		if p, ok := t.over[k]; ok {
			return p, true
		}
	}
	return t.lookupDefault(key)
}

func (t Table) lookupDefault(key string) (Price, bool) {
	for _, k := range candidates(key) {
		if p, ok := t.defaults[k]; ok {
			return p, true
		}
	}
	return Price{}, false
}

// candidates are the names key may be known by, most exact first.
func candidates(key string) []string {
	out := []string{key}
	if i := strings.LastIndexByte(key, '/'); i >= 0 && i+1 < len(key) {
		key = key[i+1:]
		out = append(out, key)
	}
	if s := snapshot.ReplaceAllString(key, ""); s != key && s != "" {
		out = append(out, s)
	}
	return out
}

// Names lists the models the table prices, overrides and defaults.
func (t Table) Names() []string {
	all := maps.Clone(t.defaults)
	maps.Copy(all, t.over)
	out := make([]string, 0, len(all))
	for k := range all {
		out = append(out, k)
	}
	return out
}

// Format shows a cost in dollars, to the cent above a dollar and with four
// decimals below it, so that small calls do not show as $0.00; an unknown
// cost is "?".
func Format(usd float64, known bool) string {
	switch {
	case !known:
		return "?"
	case usd >= 1:
		return fmt.Sprintf("$%.2f", usd)
	default:
		return fmt.Sprintf("$%.4f", usd)
	}
}
