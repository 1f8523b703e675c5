package proc

import (
	"os"
	"regexp"
	"slices"
	"strings"
)

// Role is what a child process is to weave; it decides the child's
// environment (see the package documentation for the policy).
type Role int

// The roles of weave's child processes.
const (
	// Plugin is a plugin subprocess (go-plugin over gRPC), built-in or not.
	Plugin Role = iota + 1
	// CommandHook is a command hook run with sh -c.
	CommandHook
	// Block is a runbook block of a plan task.
	Block
	// BashTool is a bash tool call a model asked for.
	BashTool
	// Git is git run by weave for its bookkeeping.
	Git
)

func (r Role) String() string {
	switch r {
	case Plugin:
		return "plugin"
	case CommandHook:
		return "command hook"
	case Block:
		return "block"
	case BashTool:
		return "bash tool call"
	case Git:
		return "git"
	}
	return "child process"
}

// EnvOptions add to or narrow what Env picks from the host's environment.
type EnvOptions struct {
	// Environ is the host's environment in os.Environ() form; nil means
	// os.Environ().
	Environ []string
	// Hide names further variables to withhold (model.api_key_env).
	Hide []string
	// Set is added last, in order, as KEY=VALUE; it is not filtered.
	Set []string
}

// TrustEnv is WEAVE_TRUST, which trusts a project's config for the weave
// it is set for (package trust). No child gets it, whatever its role: a
// weave that a model's bash call starts must ask like any other.
const TrustEnv = "WEAVE_TRUST"

// pluginNames are the host variables a plugin gets besides WEAVE_* ones.
var pluginNames = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "TZ", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "SYSTEMROOT"}

// Env returns the environment of a child process of the given role.
func Env(role Role, o EnvOptions) []string {
	environ := o.Environ
	if environ == nil {
		environ = os.Environ()
	}
	env := make([]string, 0, len(environ)+len(o.Set))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || slices.Contains(o.Hide, k) || k == TrustEnv {
			continue
		}
		if strings.HasPrefix(strings.ToUpper(k), "WEAVE_") && HasURLCredentials(v) {
			// WEAVE_BUS_URL may carry the bus's credentials: a child may
			// dial the bus, but only as what it can authenticate itself.
			v = StripURLCredentials(v)
			kv = k + "=" + v
		}
		switch role {
		case CommandHook:
			// A line of the person's own config gets the person's
			// environment, as Claude Code's hooks do, less weave's own
			// credentials.
			if IsWeaveCredential(k, v) {
				continue
			}
		case Plugin:
			if IsSecret(k, v) || !slices.Contains(pluginNames, k) && !strings.HasPrefix(k, "LC_") && !strings.HasPrefix(k, "WEAVE_") {
				continue
			}
		case Git:
			if IsSecret(k, v) || strings.HasPrefix(k, "GIT_") {
				continue
			}
		default:
			if IsSecret(k, v) {
				continue
			}
		}
		env = append(env, kv)
	}
	return append(env, o.Set...)
}

// providerKeys are the variables weave's model providers read by default.
var providerKeys = []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY", "GEMINI_API_KEY"}

// IsWeaveCredential reports whether a variable is one of weave's own
// credentials: a secret WEAVE_* variable (WEAVE_BUS_TOKEN) or a model
// provider's default key variable. The configured model.api_key_env is
// withheld through EnvOptions.Hide.
func IsWeaveCredential(name, value string) bool {
	up := strings.ToUpper(name)
	return slices.Contains(providerKeys, up) || strings.HasPrefix(up, "WEAVE_") && IsSecret(name, value)
}

// secretWords are the words of a variable name that mark it secret.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PWD", "PASSPHRASE",
	"CRED", "CREDS", "CREDENTIAL", "CREDENTIALS", "AUTH", "DSN", "COOKIE"}

// secretEndings mark a word that glues a secret word to another
// (APIKEY, AUTHTOKEN, PGPASSWORD).
var secretEndings = []string{"KEY", "TOKEN", "SECRET", "PASSWORD"}

// credentialURL matches a URL whose user info carries a password.
var credentialURL = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@`)

// IsSecret reports whether a variable must not reach a child process, by its
// name or by its value.
func IsSecret(name, value string) bool {
	up := strings.ToUpper(name)
	if up == "PWD" || up == "OLDPWD" {
		return false
	}
	for _, w := range strings.Split(up, "_") {
		if slices.Contains(secretWords, w) {
			return true
		}
		for _, e := range secretEndings {
			if strings.HasSuffix(w, e) {
				return true
			}
		}
	}
	// The pattern needs "://" and "@"; most values have neither, and the
	// check runs for every variable of every command a run starts.
	return strings.Contains(value, "://") && strings.Contains(value, "@") && credentialURL.MatchString(value)
}
