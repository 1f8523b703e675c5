package price

// Taken is when the default prices below were compiled from the vendors'
// published price lists (standard tier, prompts up to 200k tokens, 5-minute
// cache writes). Prices change: the config's prices: key overrides any of
// them, and adds models not listed.
const Taken = "2026-11-28"

// row is one model's default price, per million tokens in US dollars.
type row struct {
	name                                 string
	input, output, cacheRead, cacheWrite float64
}

// defaultRows are the defaults. OpenAI does not charge for writing its
// cache and Gemini bills cache storage by the hour, so their cache writes
// are priced as input.
var defaultRows = []row{
	// OpenAI.
	{"gpt-5.5", 5, 30, 0.5, 5},
	{"gpt-5.4", 2.5, 15, 0.25, 2.5},
	{"gpt-5.4-mini", 0.75, 4.5, 0.075, 0.75},
	{"gpt-5.4-nano", 0.2, 1.25, 0.02, 0.2},
	{"gpt-5.1", 1.25, 10, 0.125, 1.25},
	{"gpt-5.1-codex", 1.25, 10, 0.125, 1.25},
	{"gpt-5", 1.25, 10, 0.125, 1.25},
	{"gpt-5-codex", 1.25, 10, 0.125, 1.25},
	{"gpt-5-mini", 0.25, 2, 0.025, 0.25},
	{"gpt-5-nano", 0.05, 0.4, 0.005, 0.05},
	{"gpt-4.1", 2, 8, 0.5, 2},
	{"gpt-4.1-mini", 0.4, 1.6, 0.1, 0.4},
	{"gpt-4.1-nano", 0.1, 0.4, 0.025, 0.1},
	{"gpt-4o", 2.5, 10, 1.25, 2.5},
	{"gpt-4o-mini", 0.15, 0.6, 0.075, 0.15},
	{"o3", 2, 8, 0.5, 2},
	{"o3-mini", 1.1, 4.4, 0.55, 1.1},
	{"o4-mini", 1.1, 4.4, 0.275, 1.1},

	// Anthropic.
	{"claude-opus-4-7", 5, 25, 0.5, 6.25},
	{"claude-opus-4-6", 5, 25, 0.5, 6.25},
	{"claude-opus-4-5", 5, 25, 0.5, 6.25},
	{"claude-opus-4-1", 15, 75, 1.5, 18.75},
	{"claude-opus-4-0", 15, 75, 1.5, 18.75},
	{"claude-opus-4", 15, 75, 1.5, 18.75},
	{"claude-sonnet-4-6", 3, 15, 0.3, 3.75},
	{"claude-sonnet-4-5", 3, 15, 0.3, 3.75},
	{"claude-sonnet-4-0", 3, 15, 0.3, 3.75},
	{"claude-sonnet-4", 3, 15, 0.3, 3.75},
	{"claude-3-7-sonnet", 3, 15, 0.3, 3.75},
	{"claude-haiku-4-5", 1, 5, 0.1, 1.25},
	{"claude-3-5-haiku", 0.8, 4, 0.08, 1},
	{"claude-3-haiku", 0.25, 1.25, 0.03, 0.3},

	// Google Gemini (its OpenAI-compatible endpoint takes the same names).
	{"gemini-3-pro-preview", 2, 12, 0.2, 2},
	{"gemini-2.5-pro", 1.25, 10, 0.125, 1.25},
	{"gemini-2.5-flash", 0.3, 2.5, 0.03, 0.3},
	{"gemini-2.5-flash-lite", 0.1, 0.4, 0.01, 0.1},
	{"gemini-2.0-flash", 0.1, 0.4, 0.025, 0.1},
	{"gemini-2.0-flash-lite", 0.075, 0.3, 0.075, 0.075},
}

// Defaults are the default prices by model name, a fresh map.
func Defaults() map[string]Price {
	out := make(map[string]Price, len(defaultRows))
	for _, r := range defaultRows {
		out[r.name] = Price{Input: r.input, Output: r.output, CacheRead: r.cacheRead, CacheWrite: r.cacheWrite}
	}
	return out
}
