// Package price turns a model call's token use into money.
//
// A Price is what one model charges per million tokens of each kind: input,
// output, cache read and cache write, in US dollars. A Table finds a
// model's price by its name: the config's prices first (exact name), then
// the defaults (defaults.go, with the date they were taken), by exact name
// or by the name without a provider prefix ("openai/", "models/") or a
// snapshot date ("-20250929", "-2025-04-14", "@20250929", "-latest").
// A name the table does not know has no price.
//
// Guarantees:
//   - a price that is not known is never taken as zero: Cost and Worst say
//     so (their bool is false) whenever tokens of a kind whose price is
//     unknown were used, and callers show such a cost as unknown;
//   - Worst is an upper bound of what a call can cost: its input priced at
//     the dearer of input and cache write, its whole max_tokens priced as
//     output;
//   - a Table is read-only once built and safe for concurrent use.
//
// Token counts follow plugins.Usage: Anthropic counts cache reads and
// writes apart from its input tokens, while the OpenAI wire (OpenAI, Gemini
// and the other compatible servers) counts cached tokens inside its
// prompt tokens; Cost is told which (inputHoldsCache) so that no token is
// paid twice.
package price
