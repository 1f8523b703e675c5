package model

import (
	"slices"
	"strings"
)

// provider is one row of the provider table: everything the host knows
// about a model provider besides how it speaks, which is its constructor's
// file (openai.go, anthropic.go).
type provider struct {
	// Name is the value of model.provider.
	Name string
	// New builds the provider from its settings.
	New func(Settings) Provider
	// KeyEnv is the variable that holds the key when model.api_key_env is
	// not set.
	KeyEnv string
	// ExampleModel is named in messages that ask for model.name.
	ExampleModel string
	// ContextWindow is assumed when model.context_window is 0: the size of
	// the provider's current models.
	ContextWindow int
	// MaxTokens bounds an answer when neither the request nor
	// model.max_tokens does; 0 sends no bound (the answer is still
	// capped at MaxAnswerBytes).
	MaxTokens int
	// Effort and Thinking say whether the provider takes
	// reasoning_effort and thinking_budget (config refuses them
	// elsewhere).
	Effort, Thinking bool
}

// providers is the registration table, in the order messages name them.
// Adding a provider is its own file (its constructor) and one row here;
// config's accepted values and the CLI's hints follow from it, and
// TestProviderTable fails when a copy outside this package drifts.
var providers = []provider{
	{Name: "openai", New: newOpenAI, KeyEnv: "OPENAI_API_KEY", ExampleModel: "gpt-4.1", ContextWindow: 128_000, Effort: true},
	{Name: "anthropic", New: newAnthropic, KeyEnv: "ANTHROPIC_API_KEY", ExampleModel: "claude-sonnet-4-5", ContextWindow: 200_000, MaxTokens: DefaultAnthropicMaxTokens, Thinking: true},
	{Name: "azure", New: newAzure, KeyEnv: "AZURE_OPENAI_API_KEY", ExampleModel: "gpt-4.1", ContextWindow: 128_000, Effort: true},
	{Name: "gemini", New: newGemini, KeyEnv: "GEMINI_API_KEY", ExampleModel: "gemini-2.5-flash", ContextWindow: 1_048_576, Effort: true, Thinking: true},
}

// fallbackContextWindow is assumed for a provider not in the table ("none"
// among them): local models are often smaller; set model.context_window for
// them.
const fallbackContextWindow = 128_000

// lookup returns the row named name.
func lookup(name string) (provider, bool) {
	i := slices.IndexFunc(providers, func(p provider) bool { return p.Name == name })
	if i < 0 {
		return provider{}, false
	}
	return providers[i], true
}

// Names lists the providers, sorted.
func Names() []string {
	out := make([]string, 0, len(providers))
	for _, p := range providers {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// Choices names the providers for a message, in table order: "openai,
// anthropic, azure or gemini".
func Choices() string {
	names := make([]string, 0, len(providers))
	for _, p := range providers {
		names = append(names, p.Name)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// DefaultKeyEnv is the variable that holds a provider's key when
// model.api_key_env is not set; "" for a provider not in the table.
func DefaultKeyEnv(name string) string {
	p, _ := lookup(name)
	return p.KeyEnv
}

// DefaultContextWindow is the context window assumed when
// model.context_window is 0: the size of the provider's current models.
// Local models are often smaller; set model.context_window for them.
func DefaultContextWindow(name string) int {
	if p, ok := lookup(name); ok {
		return p.ContextWindow
	}
	return fallbackContextWindow
}

// exampleModel is a model the provider serves, for messages.
func exampleModel(name string) string {
	if p, ok := lookup(name); ok {
		return p.ExampleModel
	}
	return providers[0].ExampleModel
}
