package host

import (
	"slices"
	"strings"
	"testing"
)

func TestPluginEnvironHasNoSecrets(t *testing.T) {
	for k, v := range map[string]string{"WEAVE_BUS_TOKEN": "fake-bus", "WEAVE_DB_PASS": "fake-pass", "WEAVE_DB_PWD": "fake-pwd",
		"WEAVE_SENTRY_DSN": "fake-dsn", "WEAVE_UPSTREAM": "https://u:fake-url@example.com", "OPENAI_API_KEY": "fake-key", "WEAVE_LOG_LEVEL": "debug"} {
		t.Setenv(k, v)
	}
	env := PluginEnviron()
	joined := strings.Join(env, "\n")
	for _, s := range []string{"fake-bus", "fake-pass", "fake-pwd", "fake-dsn", "fake-url", "fake-key"} {
		if strings.Contains(joined, s) {
			t.Errorf("PluginEnviron() passes the secret %q:\n%s", s, joined)
		}
	}
	if !slices.Contains(env, "WEAVE_LOG_LEVEL=debug") || !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		t.Errorf("PluginEnviron() lacks PATH or a plain WEAVE_ variable:\n%s", joined)
	}
}
