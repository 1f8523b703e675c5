package model

import (
	"go/token"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/internal/proc"
	"github.com/weavehq/weave/internal/srcscan"
)

// TestProviderTable ties the provider table to the copies that cannot read
// it: config's accepted values and messages (config imports nothing of the
// host) and internal/proc's withheld key variables.
func TestProviderTable(t *testing.T) {
	keys := config.Keys()
	key := func(name string) config.Key {
		i := slices.IndexFunc(keys, func(k config.Key) bool { return k.Name == name })
		if i < 0 {
			t.Fatalf("config has no key %s", name)
		}
		return keys[i]
	}
	got := slices.Sorted(slices.Values(key("model.provider").Allowed))
	want := slices.Sorted(slices.Values(append(Names(), "none")))
	if !slices.Equal(got, want) {
		t.Errorf("config accepts model.provider %v, want none and the provider table: %v", got, want)
	}
	keyDoc := key("model.api_key_env").Doc
	for _, p := range providers {
		if p.New == nil || p.KeyEnv == "" || p.ExampleModel == "" || p.ContextWindow <= 0 {
			t.Errorf("provider row %q is incomplete: %+v", p.Name, p)
		}
		if !strings.Contains(keyDoc, p.KeyEnv) {
			t.Errorf("config's model.api_key_env doc %q does not name %s, the default of %s", keyDoc, p.KeyEnv, p.Name)
		}
		if !proc.IsWeaveCredential(p.KeyEnv, "") {
			t.Errorf("proc.IsWeaveCredential(%q) = false: a child would see %s's default key", p.KeyEnv, p.Name)
		}
		_, _, err := config.Load(config.Options{UserConfigDir: t.TempDir(), Flags: map[string]any{"model.provider": p.Name}})
		if err == nil || !strings.Contains(err.Error(), p.ExampleModel) {
			t.Errorf("config.Load(model.provider=%s, no model.name) = %v, want an error naming %s", p.Name, err, p.ExampleModel)
		}
		_, _, err = config.Load(config.Options{UserConfigDir: t.TempDir(), Flags: map[string]any{"model.provider": p.Name, "model.name": p.ExampleModel,
			"model.base_url": "https://models.example"}})
		if err != nil {
			t.Errorf("config.Load(model.provider=%s) = %v, want it accepted", p.Name, err)
		}
		if got, want := config.ProviderCapabilities()[p.Name], [2]bool{p.Effort, p.Thinking}; got != want {
			t.Errorf("config lets %s take reasoning_effort, thinking_budget = %v, the table says %v", p.Name, got, want)
		}
	}
}

// handListExempt are files that may spell providers by hand, with why.
var handListExempt = map[string]string{
	"config/keys.go":        "config's copy, checked by TestProviderTable",
	"config/models.go":      "config's checks of what one provider needs, keyed by the copy's rows",
	"internal/proc/env.go":  "proc's copy of the key variables, checked by TestProviderTable",
	"cmd/fakemodel/main.go": "names the two wire formats the fake model speaks, not the table",
}

// TestNoHandListsOfProviders fails when code outside this package spells a
// provider's key variable, or names two providers in one string, instead of
// asking the table (Names, Choices, DefaultKeyEnv): such a hint goes stale
// when a provider is added.
func TestNoHandListsOfProviders(t *testing.T) {
	words := make([]*regexp.Regexp, 0, len(providers))
	for _, p := range providers {
		words = append(words, regexp.MustCompile(`\b`+regexp.QuoteMeta(p.Name)+`\b`))
	}
	exempt := func(rel string) bool { _, ok := handListExempt[rel]; return ok }
	srcscan.Strings(t, exempt, func(pos token.Position, s string) {
		named := 0
		for i, p := range providers {
			if strings.Contains(s, p.KeyEnv) {
				t.Errorf("%s: %q spells %s; ask model.DefaultKeyEnv", pos, s, p.KeyEnv)
			}
			if words[i].MatchString(s) {
				named++
			}
		}
		if named > 1 {
			t.Errorf("%s: %q names providers by hand; ask model.Choices or model.Names", pos, s)
		}
	})
}
