package proc

import (
	"slices"
	"strings"
	"testing"
)

func TestIsSecret(t *testing.T) {
	tests := []struct {
		name, value string
		want        bool
	}{
		{"OPENAI_API_KEY", "sk-fake", true},
		{"GITHUB_TOKEN", "ghp_fake", true},
		{"AWS_SECRET_ACCESS_KEY", "fake", true},
		{"DB_PASS", "hunter2", true},
		{"MYSQL_PWD", "hunter2", true},
		{"SENTRY_DSN", "https://abc@sentry.example/1", true},
		{"PGPASSWORD", "hunter2", true},
		{"NPM_AUTHTOKEN", "fake", true},
		{"OPENAI_APIKEY", "fake", true},
		{"WEAVE_BUS_TOKEN", "fake", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", "/tmp/c.json", true},
		{"DATABASE_URL", "postgres://app:hunter2@localhost:5432/app", true},
		{"UPSTREAM", "https://user:pa55@example.com/x", true},
		{"PWD", "/work", false},
		{"OLDPWD", "/", false},
		{"PATH", "/usr/bin", false},
		{"GIT_AUTHOR_NAME", "Ann", false},
		{"KEYBOARD_LAYOUT", "us", false},
		{"HOMEPAGE", "https://example.com/a:b", false},
		{"REPO", "ssh://git@github.com/x/y", false},
	}
	for _, tt := range tests {
		if got := IsSecret(tt.name, tt.value); got != tt.want {
			t.Errorf("IsSecret(%q, %q) = %v, want %v", tt.name, tt.value, got, tt.want)
		}
	}
}

// fakeEnviron is a host environment with fake secrets of every kind.
var fakeEnviron = []string{
	"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_TIME=C", "PWD=/work",
	"WEAVE_LOG_LEVEL=debug", "WEAVE_TRUST=1", "WEAVE_BUS_TOKEN=fake-bus-token",
	"ANTHROPIC_API_KEY=fake-anthropic", "MY_MODEL_CRED=fake-model",
	"DB_PASS=fake-pass", "MYSQL_PWD=fake-pwd", "SENTRY_DSN=https://fake-dsn@sentry.example/1",
	"DATABASE_URL=postgres://app:fake-url-pass@localhost/app",
	"GIT_DIR=/elsewhere/.git", "GIT_AUTHOR_NAME=Ann", "EDITOR=vi",
}

var fakeSecrets = []string{"fake-bus-token", "fake-anthropic", "fake-model", "fake-pass", "fake-pwd", "fake-dsn", "fake-url-pass"}

// weaveSecrets are the fake secrets that are weave's own credentials.
var weaveSecrets = []string{"fake-bus-token", "fake-anthropic", "fake-model"}

func TestEnvPolicy(t *testing.T) {
	tests := []struct {
		role     Role
		want     []string // must be present
		dontWant []string // names that must be absent
	}{
		{Plugin, []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_TIME=C", "WEAVE_LOG_LEVEL=debug"}, []string{"EDITOR", "PWD", "GIT_DIR"}},
		{CommandHook, []string{"PATH=/usr/bin", "EDITOR=vi", "PWD=/work", "GIT_DIR=/elsewhere/.git", "GIT_AUTHOR_NAME=Ann", "DB_PASS=fake-pass", "DATABASE_URL=postgres://app:fake-url-pass@localhost/app"}, nil},
		{Block, []string{"PATH=/usr/bin", "EDITOR=vi", "WEAVE_LOG_LEVEL=debug"}, []string{"MY_MODEL_CRED"}},
		{BashTool, []string{"PATH=/usr/bin", "EDITOR=vi"}, []string{"MY_MODEL_CRED"}},
		{Git, []string{"PATH=/usr/bin", "HOME=/home/u"}, []string{"GIT_DIR", "GIT_AUTHOR_NAME"}},
	}
	for _, tt := range tests {
		t.Run(tt.role.String(), func(t *testing.T) {
			env := Env(tt.role, EnvOptions{Environ: fakeEnviron, Hide: []string{"MY_MODEL_CRED"}, Set: []string{"ADDED=1"}})
			joined := strings.Join(env, "\n")
			secrets := fakeSecrets
			if tt.role == CommandHook {
				secrets = weaveSecrets
			}
			for _, s := range secrets {
				if strings.Contains(joined, s) {
					t.Errorf("Env(%s) passes the secret %q:\n%s", tt.role, s, joined)
				}
			}
			for _, w := range append(tt.want, "ADDED=1") {
				if !slices.Contains(env, w) {
					t.Errorf("Env(%s) lacks %q:\n%s", tt.role, w, joined)
				}
			}
			for _, name := range append(tt.dontWant, TrustEnv) {
				if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") }) {
					t.Errorf("Env(%s) passes %s:\n%s", tt.role, name, joined)
				}
			}
		})
	}
}

// TestEnvNATSCredentials: the bus URL reaches every child without its
// credentials, and the bus.nats.* variables that name secrets or their
// files reach none.
func TestEnvNATSCredentials(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin",
		"WEAVE_BUS_URL=nats://tok-url-6612@127.0.0.1:4222",
		"WEAVE_BUS_NATS_CREDS_FILE=/home/u/weave.creds",
		"WEAVE_BUS_NATS_NKEY_FILE=/home/u/weave.nk",
		"WEAVE_BUS_NATS_PASSWORD_FILE=/home/u/pw",
		"WEAVE_BUS_NATS_PASSWORD_ENV=NATS_PASSWORD",
		"WEAVE_BUS_NATS_TOKEN_FILE=/home/u/tok",
		"WEAVE_BUS_NATS_TOKEN_ENV=NATS_TOKEN",
		"WEAVE_BUS_NATS_KEY_FILE=/home/u/client.key",
		"NATS_PASSWORD=pw-6612",
		"NATS_TOKEN=tok-6612",
	}
	for _, role := range []Role{Plugin, CommandHook, Block, BashTool, Git} {
		env := strings.Join(Env(role, EnvOptions{Environ: environ, Hide: []string{"NATS_PASSWORD", "NATS_TOKEN"}}), "\n")
		for _, s := range []string{"tok-url-6612", "/home/u/", "pw-6612", "tok-6612", "NATS_PASSWORD", "NATS_TOKEN"} {
			if strings.Contains(env, s) {
				t.Errorf("Env(%s) passes %q:\n%s", role, s, env)
			}
		}
		if !strings.Contains(env, "WEAVE_BUS_URL=nats://127.0.0.1:4222") {
			t.Errorf("Env(%s) lacks the bus URL without credentials:\n%s", role, env)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":             "nats://127.0.0.1:4222",
		"nats://u:p@h:4222":                 "nats://***@h:4222",
		"nats://tok@h:4222":                 "nats://***@h:4222",
		"nats://u:p%zz@h:1,nats://u:p@h2:2": "nats://***@h:1,nats://***@h2:2",
		"ws://h:1/path@x":                   "ws://h:1/path@x",
		"tls://a:b@c@h:4222":                "tls://***@h:4222",
		"not a url user@host":               "not a url user@host",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
