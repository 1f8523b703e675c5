package busface

import (
	"fmt"
	"os"
	"strings"

	"github.com/weavehq/weave/bus/natsbus"
	"github.com/weavehq/weave/config"
	"github.com/weavehq/weave/internal/proc"
)

// NATSAuth reads the nats backend's credentials and TLS settings as config
// bus.nats.* names them: secrets from their files or variables, never from
// config itself. A credential in the URL as well is refused: one place says
// who weave is.
func NATSAuth(cfg *config.Config, url string) (natsbus.Auth, error) {
	n := cfg.Bus.NATS
	a := natsbus.Auth{
		CredsFile:  n.CredsFile,
		NKeyFile:   n.NKeyFile,
		User:       n.User,
		CAFile:     n.CAFile,
		CertFile:   n.CertFile,
		KeyFile:    n.KeyFile,
		ServerName: n.ServerName,
	}
	var err error
	if a.Password, err = secret("bus.nats.password", n.PasswordFile, n.PasswordEnv); err != nil {
		return a, err
	}
	if a.Token, err = secret("bus.nats.token", n.TokenFile, n.TokenEnv); err != nil {
		return a, err
	}
	if proc.HasURLCredentials(url) && (a.CredsFile != "" || a.NKeyFile != "" || a.User != "" || a.Password != "" || a.Token != "") {
		return a, fmt.Errorf("the bus URL %s carries credentials and bus.nats.* gives some too: keep one (bus.nats.* keeps them out of the URL)", natsbus.Redact(url))
	}
	return a, nil
}

// secret reads the secret of key from its file or its variable; setting
// both is a mistake. Surrounding white space (a file's newline) is dropped.
func secret(key, file, env string) (string, error) {
	switch {
	case file != "" && env != "":
		return "", fmt.Errorf("%s_file and %s_env are both set: keep one", key, key)
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s_file: %w", key, err)
		}
		v := strings.TrimSpace(string(data))
		if v == "" {
			return "", fmt.Errorf("%s_file %s is empty", key, file)
		}
		return v, nil
	case env != "":
		v := strings.TrimSpace(os.Getenv(env))
		if v == "" {
			return "", fmt.Errorf("%s_env names %s, which is not set (export it in the shell that runs weave)", key, env)
		}
		return v, nil
	}
	return "", nil
}
